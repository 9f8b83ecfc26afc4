"""What a user following docs/metrics.md runs, as three real processes on loopback: `steward
twin` in real time (its exporters' samples are the wall clock's), a real Prometheus scraping its
DCGM, engine and Kueue exporters, and `steward run --backend kubernetes` reading its signals
from that Prometheus (steward.yaml's `metrics.sources: [prometheus]`).

The in-process system test (test_default_day_prometheus.py) steps the twin's clock and asks
Prometheus at the observation's time; here nothing is stepped, so what it cannot show is shown:
the agent's readings come from Prometheus and are fresh on the wall clock, a decision made on
them is executed on the twin (render, which nobody uses at first, goes to zero under the quick
policy), a series that vanishes with its pod leaves Prometheus at the next scrape, as a real
exporter's does; and when Prometheus dies (SIGKILL) the agent says its readings are stale,
stays healthy and scales nothing down until Prometheus is back, then says so and goes on. A
SIGTERM ends the agent cleanly with its decision log intact.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from agent.audit import AuditLog
from lab.bench.prometheus_server import RealPrometheus
from lab.bench.replicas import (
    ROOT,
    executed_in,
    free_port,
    quick_policy,
    terminate,
    wait_for,
)
from tests.kubernetes.conftest import KUBECTL
from tests.kubernetes.test_default_day_prometheus import twin_jobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

SCALE_DOWN = "scale render to 0 replica(s)"
HELD_TICKS = 8
"""Ticks the agent must hold render while its readings are stale: with fresh ones the quick
policy scales an idle render down within about four (idle 2 s, then the next tick)."""
ENV = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_")}
"""This machine's own Steward settings (a data dir, an audit key) stay out of the processes."""


@contextmanager
def steward(
    args: list[str], log: Path, stdout: int = subprocess.DEVNULL
) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m agent.cli ARGS` with its stderr in `log`; ended on the way out (SIGTERM, then
    SIGKILL) if it still runs."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", *args],
            cwd=ROOT,
            env=ENV,
            stdout=stdout,
            stderr=err,
        )
        try:
            yield proc
        finally:
            terminate(proc)
            if proc.stdout is not None:
                proc.stdout.close()


def first_line(proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> str:
    """The first line a process prints (the twin's URL), or a failure with its log."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline().decode().strip() if ready else ""
    assert line, f"printed nothing within {timeout:g} s: {log.read_text(errors='replace')[-3000:]}"
    return line


def to_the_end(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120, check=False
    )


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """A one-shot `steward` command, as a user types it."""
    return to_the_end([sys.executable, "-m", "agent.cli", *args])


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        answer = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
        return answer.status_code, answer.json()
    except (httpx.HTTPError, ValueError):
        return 0, {}


def ticks(port: int) -> int:
    status, body = healthz(port)
    assert status == 200, (status, body)
    return int(body["ticks"])


def kubectl(kubeconfig: Path, *args: str) -> str:
    """The real kubectl against the twin, through the kubeconfig `steward twin` wrote."""
    done = to_the_end([KUBECTL, "--kubeconfig", str(kubeconfig), *args])
    assert done.returncode == 0, done.stderr
    return done.stdout


def render_replicas(kubeconfig: Path) -> tuple[int, int]:
    """render's StatefulSet as the twin's API has it: (wanted, ready) replicas."""
    sts = json.loads(kubectl(kubeconfig, "get", "statefulset", "render", "-o", "json"))
    return sts["spec"]["replicas"], sts["status"].get("readyReplicas", 0)


def open_stale(log: Path) -> set[str]:
    """The stale_metrics findings the agent's log says are open: appeared, not cleared since."""
    open_now: set[str] = set()
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the CLI's own lines ("serving /healthz ..."), a line still being written
        if event.get("kind") != "stale_metrics":
            continue
        if event["event"] == "finding appeared":
            open_now.add(event["key"])
        elif event["event"] == "finding cleared":
            open_now.discard(event["key"])
    return open_now


def series(prometheus: RealPrometheus, query: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{prometheus.url}/api/v1/query", params={"query": query}, timeout=5)
    result: list[dict[str, Any]] = answer.json()["data"]["result"]
    return result


def intent_signals(data: Path, decision_id: str) -> dict[str, Any]:
    log = AuditLog.open(data, readonly=True)
    try:
        (record,) = log.records(kind="intent", decision_id=decision_id)
    finally:
        log.close()
    return dict(record.payload.signals)  # type: ignore[union-attr]


def scaled_down(data: Path) -> list[str]:
    """The decisions whose executed action scaled render to zero, oldest first."""
    return [d for _, d, _, action in executed_in(data) if action == SCALE_DOWN]


def test_the_agent_decides_on_prometheus_and_holds_while_it_is_down(tmp_path: Path) -> None:
    agent_dir, kubeconfig = tmp_path / "agent", tmp_path / "twin" / "twin.kubeconfig"
    twin_log, agent_log = tmp_path / "twin.log", tmp_path / "agent.log"
    twin_port, agent_port = free_port(), free_port()
    (tmp_path / "prometheus").mkdir()
    with ExitStack() as stack:  # on the way out: the agent, then Prometheus, then the twin
        twin_args = ["twin", "--data-dir", str(tmp_path / "twin"), "--port", str(twin_port)]
        twin = stack.enter_context(steward(twin_args, twin_log, stdout=subprocess.PIPE))
        assert first_line(twin, twin_log) == f"http://127.0.0.1:{twin_port}"
        assert kubeconfig.exists()
        jobs = twin_jobs(f"127.0.0.1:{twin_port}", "1s")
        prometheus = RealPrometheus(tmp_path / "prometheus", [], interval="1s", jobs=jobs)
        stack.callback(prometheus.kill)
        prometheus.start()
        config = tmp_path / "steward.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "backend": "kubernetes",
                    "kubernetes": {"kubeconfig": str(kubeconfig), "in_cluster": False},
                    "metrics": {"sources": ["prometheus"], "prometheus": {"url": prometheus.url}},
                }
            )
        )
        policy = quick_policy(tmp_path / "policy.yaml")
        run = ["run", "--config", str(config), "--data-dir", str(agent_dir), "--policy"]
        run += [str(policy), "--interval", "1", "--port", str(agent_port), "--forever"]
        agent = stack.enter_context(steward(run, agent_log))

        _decides_on_prometheus(agent_port, agent_dir, config, kubeconfig, prometheus)
        prometheus.kill()  # SIGKILL, as a crash
        _holds_while_prometheus_is_down(agent_port, agent_dir, agent_log, kubeconfig)
        prometheus.start()  # the same port and data: what it scraped before is there
        _goes_on_when_prometheus_is_back(agent_port, agent_dir, agent_log, kubeconfig)

        agent.send_signal(signal.SIGTERM)  # finishes its tick and stops: exit 0
        assert agent.wait(60) == 0, agent_log.read_text()[-3000:]
    verified = cli("audit", "verify", "--data-dir", str(agent_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    for log in (agent_log, twin_log):
        assert "Traceback" not in log.read_text(errors="replace"), log.read_text()[-3000:]


def _decides_on_prometheus(
    port: int, data: Path, config: Path, kubeconfig: Path, prometheus: RealPrometheus
) -> None:
    """Healthy and ticking; render, idle, scaled to zero on readings Prometheus gave, fresh."""
    wait_for("/healthz answers 200", lambda: healthz(port)[0] == 200, 60, every=0.2)
    first = ticks(port)
    wait_for("the agent ticks", lambda: ticks(port) >= first + 2, 30, every=0.2)
    wait_for("render is scaled to zero", lambda: scaled_down(data), 90, every=0.5)
    wait_for("the twin has render at zero", lambda: render_replicas(kubeconfig)[0] == 0, 30)
    signals = intent_signals(data, scaled_down(data)[0])
    assert signals["stale_metrics"] == [], signals  # decided on fresh readings
    # A vanished pod's series is gone at the next scrape (a staleness marker), as a real
    # exporter's; left in Prometheus, its last sample would date every card of the exporter.
    wait_for(
        "render's card series leave Prometheus with its pod",
        lambda: not series(prometheus, 'DCGM_FI_DEV_GPU_UTIL{container="render"}'),
        20,
        every=0.5,
    )

    shown = cli("status", "--json", "--config", str(config), "--data-dir", str(data))
    assert shown.returncode == 0, shown.stderr
    state = json.loads(shown.stdout)
    cards = [g for n in state["nodes"] for g in n["gpus"]]
    assert cards
    for card in cards:
        util = card["utilization"]
        assert util["source"] == "prometheus:gpu_util" and util["status"] == "fresh", card
    (render,) = [w for w in state["workloads"] if w["name"] == "render"]
    queue = render["queue_depth"]
    assert queue["source"] == "prometheus:jobs_waiting" and queue["status"] == "fresh", queue
    assert queue["value"] == 0  # nobody renders at first: why it went to zero


def _holds_while_prometheus_is_down(port: int, data: Path, log: Path, kubeconfig: Path) -> None:
    """Prometheus gone: stale_metrics findings within a few ticks, /healthz still 200, and a
    render scaled back up by hand is held there however idle, for want of fresh readings."""
    ran, killed_at = len(executed_in(data)), ticks(port)
    wait_for(
        "stale_metrics findings for render's queue and render-1's cards",
        lambda: {"stale_metrics:render", "stale_metrics:render-1"} <= open_stale(log),
        30,
        every=0.2,
    )
    assert ticks(port) <= killed_at + 3, "the findings took more than a few ticks"
    kubectl(kubeconfig, "scale", "statefulset", "render", "--replicas=1")
    wait_for("render's replica is ready", lambda: render_replicas(kubeconfig) == (1, 1), 90, 0.5)
    ready_at = ticks(port)  # ticks() fails unless /healthz answers 200
    wait_for("the agent ticks on", lambda: ticks(port) >= ready_at + HELD_TICKS, 60, every=0.2)
    assert render_replicas(kubeconfig) == (1, 1), "render was scaled while readings were stale"
    assert len(executed_in(data)) == ran, executed_in(data)[ran:]
    assert open_stale(log), "the findings cleared with Prometheus still down"


def _goes_on_when_prometheus_is_back(port: int, data: Path, log: Path, kubeconfig: Path) -> None:
    """Prometheus back: the findings clear and the idle render goes to zero again."""
    wait_for("the stale findings clear", lambda: not open_stale(log), 30, every=0.2)
    wait_for("render goes to zero again", lambda: len(scaled_down(data)) >= 2, 60, every=0.5)
    assert intent_signals(data, scaled_down(data)[1])["stale_metrics"] == []
    wait_for("the twin has render at zero", lambda: render_replicas(kubeconfig)[0] == 0, 30)
    assert healthz(port)[0] == 200
