"""Replicas of Steward as real processes: `python -m agent.cli run --backend kubernetes`, each
with its own data dir, identity, service account token and port, against one twin served by the
test process under the manifests' RBAC, with short Lease timings so takeovers show in seconds.

The twin runs the built-in day at SPEED, and the replicas read its measurements as a metric
source (`metrics.sources: [twin]`); the policy is the shipped one with its waits shortened to
wall-clock seconds, so that the leader keeps finding something to do.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from agent.audit import AuditLog
from lab.twin.kubeconfig import kubeconfig_for
from lab.twin.server import Twin
from lab.twin.shipped_rbac import SA, enforcing
from policies.loader import DEFAULT_POLICY

ROOT = Path(__file__).resolve().parents[2]
LEASE_S, RENEW_S, RETRY_S = 3, 2.0, 1.0
INTERVAL_S = 0.5
SPEED = 120.0
"""Simulated seconds per wall second: the built-in day's demand moves while the test watches."""
TOKEN = "token-{name}"


def quick_policy(path: Path) -> Path:
    """The shipped policy with its cooldowns and idle waits in seconds, not minutes."""
    text = DEFAULT_POLICY.read_text()
    for old, new in (
        ("scale_workload: 2m", "scale_workload: 1s"),
        ("place_replica: 1m", "place_replica: 1s"),
        ("idle_before_zero: 10m", "idle_before_zero: 2s"),
        ("idle_before_zero: 5m", "idle_before_zero: 2s"),
        ("actions_per_hour: 12", "actions_per_hour: 1000"),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Replica:
    name: str
    twin: Twin
    root: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    """More environment for the process (e.g. the LLM planner's endpoint)."""

    @property
    def token(self) -> str:
        return TOKEN.format(name=self.name)

    @property
    def data(self) -> Path:
        return self.root / self.name

    def start(self, policy: Path) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        kubeconfig = kubeconfig_for(self.twin, self.token, self.root / f"{self.name}.kubeconfig")
        config = {
            "backend": "kubernetes",
            "interval_s": INTERVAL_S,
            "kubernetes": {
                "kubeconfig": str(kubeconfig),
                "in_cluster": False,
                "request_timeout_s": 1.0,
                "retry_attempts": 2,
                "retry_max_wait_s": 0.1,
                "leader_election": {
                    "lease_duration_s": LEASE_S,
                    "renew_deadline_s": RENEW_S,
                    "retry_period_s": RETRY_S,
                },
            },
            "metrics": {"sources": ["twin"], "twin_url": self.twin.url},
        }
        path = self.root / f"{self.name}.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        env = {
            **os.environ,
            "STEWARD_CONFIG": str(path),
            "STEWARD_IDENTITY": self.name,
            "STEWARD_NAMESPACE": "steward",
            "KUBECONFIG": str(kubeconfig),
            **self.extra_env,
        }
        args = ["run", "--forever", "--data-dir", str(self.data), "--policy", str(policy)]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", *args, "--port", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(self.root / f"{self.name}.log").open("wb"),
        )

    def health(self) -> dict[str, Any] | None:
        try:
            answer = httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1)
            got: dict[str, Any] = answer.json()
        except (httpx.HTTPError, ValueError):
            return None
        return got

    def leading(self) -> bool:
        h = self.health()
        return bool(h and h["leader"]["leading"])

    def metrics(self) -> str:
        return httpx.get(f"http://127.0.0.1:{self.port}/metrics", timeout=2).text

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None:
            terminate(self.proc)

    def log_tail(self) -> str:
        path = self.root / f"{self.name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def executed(self) -> list[tuple[datetime, str, int, str]]:
        """(when, decision, index, action) for every action this replica's log says ran."""
        return executed_in(self.data)


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as Kubernetes stops a pod; SIGKILL if it still runs 30 s later."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def executed_in(data: Path) -> list[tuple[datetime, str, int, str]]:
    if not (data / "audit.db").exists():
        return []
    log = AuditLog.open(data, readonly=True)
    try:
        actions: dict[str, list[str]] = {}
        ran: list[tuple[datetime, str, int, str]] = []
        for r in log.records():
            p = r.payload
            if p.kind == "intent":
                actions[p.decision_id] = [q.action.describe() for q in p.proposals]
            elif p.kind == "outcome":
                for o in p.results:
                    if o.executed:
                        what = actions[p.decision_id][o.index]
                        ran.append((r.time, p.decision_id, o.index, what))
        return ran
    finally:
        log.close()


def wait_for(what: str, check: Any, timeout: float, every: float = 0.1) -> float:
    """Poll `check` until true; returns the monotonic time it first was."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return time.monotonic()
        time.sleep(every)
    raise AssertionError(f"not within {timeout:g} s: {what}")


@contextmanager
def two_replicas(root: Path) -> Iterator[tuple[Twin, Replica, Replica, Path]]:
    """The twin under the manifests' RBAC, and two replicas of one service account (each with
    its own token, as each pod has), not yet started; both stopped at the end."""
    with enforcing({"token-steward-0": SA, "token-steward-1": SA}, speed=SPEED) as twin:
        a, b = Replica("steward-0", twin, root), Replica("steward-1", twin, root)
        try:
            yield twin, a, b, quick_policy(root / "policy.yaml")
        finally:
            a.stop()
            b.stop()
