"""`steward bench chaos`: the agent on the simulated cluster, as a real process, under abuse.

For `--minutes N` the benchmark runs `steward run --planner llm` in a temporary data dir and,
again and again: lets it work a random few seconds, kills it with SIGKILL, damages what a crash
or the world could damage, and starts it again. The damage, drawn from `--seed`:
- the model's server (lab/scripted_server.py, on loopback) answers every LLM decision with
  a random answer: a valid plan (cordons, drains and scales included), every malformed HTTP-200
  shape, a hang, a byte-by-byte trickle, HTTP 500 / 429;
- API faults (the cluster's scale/place/cordon/drain calls fail transiently), observation
  outages (observe fails, so the metrics are not there) and node losses, injected into the
  simulated cluster between two lives;
- a torn last line appended to the rotation journal.

At the end a clean `steward run --ticks 1` reconciles what the last kill left, and the
invariants are checked from the data dir alone: `steward audit verify` clean; no action executed
twice (one outcome per decision, each action at most once); none executed without an allow
verdict (or an approval); no intent lost (every intent closed, or waiting for a human); record
times monotonic; pool minimums kept (the desired cards of every pool, sampled after each kill
and at the end, never below the policy's min_cards). It prints `kills`, `restarts`,
`decisions` and `violations` (with what each violation is).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.approvals.inbox import Inbox
from agent.audit import HEAD_FILE, ApprovalRecord, AuditLog, Intent, Outcome
from lab.bench.leadership import LeadershipReport, run_leadership
from lab.scripted_server import BAD_SHAPES, Reply, ScriptedServer, bad, error, hang
from lab.scripted_server import submit as submit_reply
from lab.scripted_server import trickle as trickled
from lab.sim.backend import SimCluster
from lab.sim.faults import ApiErrors, NodeLoss
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy
from tools.errors import TemporaryError

STEWARD = [sys.executable, "-m", "agent.cli"]
ROOT = Path(__file__).resolve().parents[2]
NODES = ("gx10-a", "gx10-b", "ws-1", "render-1")
WORKLOADS = ("burst-llm", "render", "tts", "worker")
EARLY_KILLS = 0.5
"""The share of lives killed at a random moment of their start-up."""


class ChaosReport(BaseModel):
    """What one chaos run did and found."""

    minutes: float
    seed: int
    kills: int
    restarts: int
    exits: int
    """Lives that ended on their own (the day's ticks done) before the kill came."""
    crashes: int
    """Lives that ended with an error of their own (each one is also a violation)."""
    decisions: int
    executed: int
    records: int
    faults: dict[str, int]
    llm_answers: dict[str, int]
    violations: int
    problems: list[str]
    leadership: LeadershipReport | None = None
    """With --api-faults: two replicas under that share of failing API requests — how often
    the lead moved, and model calls made while not leading (each one a violation)."""


class _Feed:
    """The model's answers: drawn at random, counted by kind."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.served: Counter[str] = Counter()

    def __call__(self) -> Reply:
        rng = self.rng
        kind = rng.choice(
            ["plan", "plan", "plan", *sorted(BAD_SHAPES), "hang", "trickle", "http_500", "429"]
        )
        self.served[kind] += 1
        if kind == "plan":
            return submit_reply(self._actions(), "chaos: a plan the guard must judge")
        if kind in BAD_SHAPES:
            return bad(kind)
        if kind == "hang":
            return hang(30.0)
        if kind == "trickle":
            return trickled(submit_reply(self._actions()), every_s=0.05)
        if kind == "http_500":
            return error(500, "chaos")
        return error(429, "chaos: slow down", retry_after="1")

    def _actions(self) -> list[dict[str, Any]]:
        rng = self.rng
        out: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            pick = rng.random()
            if pick < 0.5:
                out.append(
                    {
                        "type": "scale_workload",
                        "workload": rng.choice(WORKLOADS),
                        "replicas": rng.randint(0, 3),
                        "reason": "chaos",
                    }
                )
            elif pick < 0.8:
                out.append({"type": "cordon_node", "node": rng.choice(NODES), "reason": "chaos"})
            elif pick < 0.9:
                out.append({"type": "uncordon_node", "node": rng.choice(NODES), "reason": "chaos"})
            else:
                out.append({"type": "drain_node", "node": rng.choice(NODES), "reason": "chaos"})
        return out


def run_chaos(
    minutes: float, seed: int, data_dir: Path | None = None, api_faults: float | None = None
) -> ChaosReport:
    """Run the soak for `minutes` (see the module docstring) and check the invariants; with
    `api_faults`, the leadership soak as well (lab/bench/leadership.py)."""
    rng = random.Random(seed)
    feed = _Feed(random.Random(seed + 1))
    with tempfile.TemporaryDirectory(prefix="steward-chaos-") as scratch:
        where = data_dir or Path(scratch) / "data"
        with ScriptedServer(source=feed) as server:
            report = _soak(minutes, seed, rng=rng, feed=feed, server=server, where=where)
    if api_faults is None:
        return report
    leaders = run_leadership(minutes, api_faults, seed)
    problems = list(report.problems)
    if leaders.model_calls_not_leading:
        problems.append(
            f"leadership: {leaders.model_calls_not_leading} model call(s) while not leading"
        )
    if not sum(leaders.model_calls.values()):
        problems.append("leadership: no model call at all, so none could come while not leading")
    if leaders.max_changes_per_minute > 1:
        problems.append(
            f"leadership: the lead moved {leaders.max_changes_per_minute} times in one minute"
        )
    extra = len(problems) - len(report.problems)
    return report.model_copy(
        update={
            "leadership": leaders,
            "problems": problems,
            "violations": report.violations + extra,
        }
    )


def _soak(
    minutes: float,
    seed: int,
    *,
    rng: random.Random,
    feed: _Feed,
    server: ScriptedServer,
    where: Path,
) -> ChaosReport:
    policy = load_policy(DEFAULT_POLICY)
    env = {
        **os.environ,
        "STEWARD_LLM_BASE_URL": server.base_url,
        "STEWARD_LLM_MODEL": "scripted-model",
        "STEWARD_LLM_TIMEOUT_S": "1.5",
        "STEWARD_LLM_DEADLINE_S": "3",
        "STEWARD_TEST_CRASH_AT": "",
    }
    command = [*STEWARD, "run", "--forever", "--planner", "llm", "--speed", "0", "--interval", "15"]
    command += ["--data-dir", str(where)]
    problems: list[str] = []
    faults: Counter[str] = Counter()
    kills = restarts = exits = crashes = 0
    ends = time.monotonic() + minutes * 60
    logs = where.parent / "agent.log"
    where.mkdir(parents=True, exist_ok=True)
    while time.monotonic() < ends:
        with logs.open("ab") as sink:
            agent = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=sink)
        # Some lives die while starting (resuming what the last one left); the others once
        # the agent has recorded its start, a few seconds into its work.
        early = rng.random() < EARLY_KILLS
        life = rng.uniform(0.5, 4.0) if early else _started(where, agent) + rng.uniform(0.3, 3.0)
        try:
            code = agent.wait(timeout=life)
        except subprocess.TimeoutExpired:
            agent.send_signal(signal.SIGKILL)
            agent.wait()
            kills += 1
        else:
            exits += 1
            if code != 0:
                crashes += 1
                problems.append(f"the agent exited {code} by itself: {_tail(logs)}")
        restarts += 1
        problems += _pool_minimums(where, policy, f"after life {restarts}")
        _damage(where, rng, faults)
    final = subprocess.run(
        [*STEWARD, "run", "--ticks", "1", "--speed", "0", "--data-dir", str(where)],
        cwd=ROOT, env={**env, "STEWARD_LLM_BASE_URL": ""}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    if final.returncode != 0:
        problems.append(f"the final clean run exited {final.returncode}: {final.stderr[-400:]}")
    problems += _pool_minimums(where, policy, "at the end")
    found = check_log(where)
    problems += found.problems
    return ChaosReport(
        minutes=minutes,
        seed=seed,
        kills=kills,
        restarts=restarts,
        exits=exits,
        crashes=crashes,
        decisions=found.decisions,
        executed=found.executed,
        records=found.records,
        faults=dict(faults),
        llm_answers=dict(feed.served),
        violations=len(problems),
        problems=problems[:50],
    )


def _started(where: Path, agent: subprocess.Popen[bytes], limit_s: float = 120.0) -> float:
    """Seconds until the agent recorded its start (the witnessed head moved), or `limit_s`."""
    began = time.monotonic()
    before = _head_seq(where)
    while time.monotonic() - began < limit_s and agent.poll() is None:
        if _head_seq(where) > before:
            break
        time.sleep(0.1)
    return time.monotonic() - began


def _head_seq(where: Path) -> int:
    try:
        return int(json.loads((where / HEAD_FILE).read_text())["seq"])
    except (OSError, ValueError, KeyError):
        return 0


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").splitlines()
    return " | ".join(lines[-3:])[-400:]


def _damage(where: Path, rng: random.Random, faults: Counter[str]) -> None:
    """Between two lives: faults into the simulated cluster, a torn journal tail."""
    if not (where / "sim.json").is_file():
        return
    roll = rng.random()
    if roll < 0.5:
        sim = SimCluster.open(where)
        if roll < 0.2:
            ops = rng.choice([("scale", "place"), ("cordon", "uncordon", "drain")])
            sim.inject(ApiErrors(count=rng.randint(1, 6), operations=ops))
            faults["api_errors"] += 1
        elif roll < 0.35:
            sim.inject(ApiErrors(count=rng.randint(1, 4), operations=("observe",)))
            faults["observe_outage"] += 1
        else:
            node = rng.choice(NODES)
            sim.inject(NodeLoss(node=node, duration_s=rng.uniform(60, 900)))
            faults["node_loss"] += 1
        sim.save(where)
    journal = where / "modes" / "journal.jsonl"
    if journal.is_file() and rng.random() < 0.15:
        with journal.open("a") as handle:
            handle.write('{"txn": "torn", "seq": 9, "kind": "st')
        faults["torn_journal"] += 1


def _pool_minimums(where: Path, policy: Policy, when: str) -> list[str]:
    if not (where / "sim.json").is_file():
        return []
    try:
        state = SimCluster.open(where).observe()
    except TemporaryError:
        return []  # the observation outage injected for the agent hits this sample too
    cards: Counter[str] = Counter()
    for w in state.workloads:
        cards[w.pool] += w.desired_replicas * w.cards_per_replica
    return [
        f"{when}: pool {name} asks for {cards[name]} card(s), below its minimum {limits.min_cards}"
        for name, limits in policy.pools.items()
        if cards[name] < limits.min_cards
    ]


class LogFindings(BaseModel):
    decisions: int
    executed: int
    records: int
    problems: list[str]


def check_log(where: Path) -> LogFindings:
    problems: list[str] = []
    verify = subprocess.run(
        [*STEWARD, "audit", "verify", "--data-dir", str(where)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if verify.returncode != 0:
        problems.append(f"audit verify exited {verify.returncode}: {verify.stderr.strip()[:400]}")
    with AuditLog.open(where, readonly=True) as log:
        records = log.records()
        unfinished = {str(r.decision_id) for r in log.unfinished_intents()}
    inbox = Inbox.open(where)
    try:
        waiting = {p.decision_id for p in inbox.listed("waiting", "approved", "denied")}
    finally:
        inbox.close()
    intents: dict[str, Intent] = {}
    outcomes: Counter[str] = Counter()
    approved: set[tuple[str, int]] = set()
    executed = 0
    last_time = None
    for r in records:
        if last_time is not None and r.time < last_time:
            problems.append(f"record seq {r.seq} at {r.time} is before the one before it")
        last_time = r.time
        p = r.payload
        if isinstance(p, Intent):
            intents[p.decision_id] = p
        elif isinstance(p, ApprovalRecord) and p.approved:
            approved.add((p.decision_id, p.action_index))
        elif isinstance(p, Outcome):
            outcomes[p.decision_id] += 1
            intent = intents.get(p.decision_id)
            seen: set[int] = set()
            for result in p.results:
                if not result.executed:
                    continue
                executed += 1
                if result.index in seen:
                    problems.append(f"{p.decision_id}: action {result.index} executed twice")
                seen.add(result.index)
                if intent is None:
                    problems.append(f"{p.decision_id}: an outcome without an intent")
                    continue
                verdict = intent.proposals[result.index].verdict
                allowed = verdict == "allow" or (
                    verdict == "needs_approval" and (p.decision_id, result.index) in approved
                )
                if not allowed:
                    problems.append(
                        f"{p.decision_id}: action {result.index} executed on verdict {verdict}"
                    )
    problems += [f"{d}: {n} outcomes" for d, n in outcomes.items() if n > 1]
    lost = sorted(unfinished - waiting)
    problems += [f"{d}: intent neither closed nor waiting for a human (lost)" for d in lost]
    return LogFindings(
        decisions=len(intents), executed=executed, records=len(records), problems=problems
    )


def report_text(report: ChaosReport) -> str:
    lines = [
        f"chaos {report.minutes:g} min (seed {report.seed}): {report.kills} kills, "
        f"{report.restarts} restarts, {report.decisions} decisions "
        f"({report.executed} actions executed, {report.records} records)",
        f"faults: {json.dumps(report.faults, sort_keys=True)}",
        f"llm answers: {json.dumps(report.llm_answers, sort_keys=True)}",
        f"violations: {report.violations}",
        *(f"  - {p}" for p in report.problems),
    ]
    if report.leadership is not None:
        led = report.leadership
        lines.append(
            f"leadership at {led.api_fault_rate:.0%} API faults: the lead moved {led.changes} "
            f"time(s) (at most {led.max_changes_per_minute} in a minute); model calls "
            f"{json.dumps(led.model_calls, sort_keys=True)}, {led.model_calls_not_leading} "
            "while not leading"
        )
    return "\n".join(lines)
