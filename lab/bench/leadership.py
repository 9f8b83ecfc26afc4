"""`steward bench chaos --api-faults RATE`: two replicas under a failing API, who leads and who
calls the model.

Two real `steward run --backend kubernetes --planner llm` processes (lab/bench/replicas.py:
their own data dirs, tokens and ports, the manifests' RBAC, short Lease timings)
run against one twin whose API fails RATE of its requests (5xx, 409, 429, timeouts), each with
its own model server on loopback (lab/scripted_server.py, answering each question with the
rules' own actions, as a compliant model would: lab/rules_proposal.py), under the shipped
policy with every scale and placement marked for deliberation (`deliberate:`), so that the
model is asked, beside the loop, whenever the day moves a replica. The
bench watches the Lease in the twin (who holds it, every 50 ms) and every request each model
server gets. It reports how often the lead moved to another replica (`changes`, and the most in
any one minute), and how many model calls came from a replica that did not hold the Lease at
that moment (`model_calls_not_leading`; a replica may call the model only while it leads).
"""

from __future__ import annotations

import itertools
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from lab.bench.replicas import Replica, two_replicas, wait_for
from lab.rules_proposal import rules_would
from lab.scripted_server import Reply, ScriptedServer, submit
from lab.twin.faults import FaultSettings
from lab.twin.resources import LEASE

NAMESPACE, LEASE_NAME = "steward", "steward-leader"
"""The replicas' Lease (lab/bench/replicas.py runs them in namespace steward)."""


class LeadershipReport(BaseModel):
    """Who led two replicas under API faults, and who called the model."""

    api_fault_rate: float
    minutes: float
    faults_injected: int
    changes: int
    """Times the Lease passed to the other replica (the first holder not counted)."""
    max_changes_per_minute: int
    """The most changes in any sliding minute of the run."""
    holders: list[tuple[float, str | None]]
    """(seconds since the start, who held the Lease from then on)."""
    model_calls: dict[str, int]
    """Chat completions each replica asked of its model."""
    model_calls_not_leading: int
    """Of those, the ones asked while another replica (or none) held the Lease."""


def run_leadership(minutes: float, rate: float, seed: int) -> LeadershipReport:
    """Run the two replicas for `minutes` with `rate` of the twin's API requests failing."""
    with (
        tempfile.TemporaryDirectory(prefix="steward-leaders-") as scratch,
        two_replicas(Path(scratch)) as (twin, a, b, policy),
        ScriptedServer(responder=_agree) as model_a,
        ScriptedServer(responder=_agree) as model_b,
    ):
        servers = {a.name: model_a, b.name: model_b}
        asking = _deliberating(policy)
        for replica in (a, b):
            _start(replica, asking, servers[replica.name].base_url)
        wait_for("a replica leads", lambda: a.leading() or b.leading(), 120)
        twin.configure_faults(FaultSettings(rate=rate, timeout_s=1.5, seed=seed))
        holders, started = _watch(twin, minutes * 60.0)
        twin.configure_faults(FaultSettings())
        calls = {name: list(s.times) for name, s in servers.items()}
        injected = sum(twin.faults.injected.values())
    return _report(minutes, rate, injected, holders, started=started, calls=calls)


def _deliberating(policy: Path) -> Path:
    """`policy` with scales and placements marked for deliberation: under two speeds the model
    is asked only questions, and without one the bench would count no model call at all."""
    path = policy.with_name("deliberating-" + policy.name)
    path.write_text(policy.read_text() + "\ndeliberate: [scale_workload, place_replica]\n")
    return path


def _agree(body: dict[str, Any]) -> Reply:
    said = "\n".join(str(m.get("content")) for m in body.get("messages") or ())
    return submit(rules_would(said), "as the rules would")


def _start(replica: Replica, policy: Path, model_url: str) -> None:
    """The replica with the LLM planner on its own model server."""
    replica.extra_env = {
        "STEWARD_LLM_BASE_URL": model_url,
        "STEWARD_LLM_MODEL": "scripted-model",
        "STEWARD_LLM_DEADLINE_S": "5",
        "STEWARD_PLANNER": "llm",
    }
    replica.start(policy)


def _watch(twin: Any, seconds: float) -> tuple[list[tuple[float, str | None]], float]:
    """Who holds the Lease, read from the twin's store every 50 ms for `seconds`."""
    holders: list[tuple[float, str | None]] = []
    started = time.monotonic()
    stop = threading.Event()

    def holder() -> str | None:
        lease = twin.store.find(LEASE, NAMESPACE, LEASE_NAME)  # not the nodes' heartbeats
        found = ((lease or {}).get("spec") or {}).get("holderIdentity")
        return str(found) if found else None

    while not stop.wait(0.05):
        now = time.monotonic()
        who = twin.call(holder)
        if not holders or holders[-1][1] != who:
            holders.append((now, who))
        if now - started >= seconds:
            break
    return holders, started


def _report(
    minutes: float,
    rate: float,
    injected: int,
    holders: list[tuple[float, str | None]],
    *,
    started: float,
    calls: dict[str, list[float]],
) -> LeadershipReport:
    leaders = [(t, who) for t, who in holders if who]
    moves = [t for (_, a), (t, b) in itertools.pairwise(leaders) if a != b]
    worst = max((sum(1 for u in moves if t <= u < t + 60.0) for t in moves), default=0)
    not_leading = 0
    for name, times in calls.items():
        for t in times:
            if t < started:
                continue  # before the watch began (the faults too)
            held = next((who for since, who in reversed(holders) if since <= t), None)
            not_leading += held != name
    return LeadershipReport(
        api_fault_rate=rate,
        minutes=minutes,
        faults_injected=injected,
        changes=len(moves),
        max_changes_per_minute=worst,
        holders=[(round(t - started, 2), who) for t, who in holders],
        model_calls={name: sum(1 for t in times if t >= started) for name, times in calls.items()},
        model_calls_not_leading=not_leading,
    )
