"""A deliberation's answer that mixes an action the policy allows with one that needs approval is
split: the allowed scale-up runs in the tick that judges the answer, the drain waits in the
approval queue as a decision of its own and runs only once a person approves it; denied, it
never runs. Injected or careless text in an answer cannot hold back the capacity beside it.

The model is a stub that speaks the OpenAI chat-completions protocol over HTTP
(lab/scripted_server.py); the graph, the guard, the decision log, the approval inbox and the
CLI's `steward approve` / `steward deny` / `steward audit verify` are the real ones.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent.audit import AuditLog, DeliberationRecord, Execution, Intent, Outcome
from agent.cli.app import app
from agent.daemon.runtime import Runtime
from agent.loop.approval_split import splits
from agent.loop.state import Decision, Deliberated
from agent.planners.question import Question, QuestionKind
from lab.scripted_server import Reply, ScriptedServer, submit
from lab.sim.backend import SimCluster
from policies.judgement import Verdict
from policies.loader import load_default_policy
from tests.deliberation.conftest import planner, tick_until
from tests.deliberation.test_injected_instructions import SCENARIO
from tools.actions import Plan, ScaleWorkload

OWNER = "homelab-owner"
"""The member of the default policy's approver group `owners`."""
SCALE = "scale burst-llm to 1 replica(s)"
DRAIN = "drain render-1 (deadline 60 s)"


def answer(body: dict[str, Any]) -> Reply:
    """The shared-card anomaly's answer: a scale-up the policy allows and a drain it does not
    let run without a person (drain_any_node)."""
    return submit(
        [
            {"type": "scale_workload", "workload": "burst-llm", "replicas": 1},
            {"type": "drain_node", "node": "render-1", "deadline_s": 60},
        ],
        "capacity for the burst, and render-1 drained as the notes say",
    )


def _records(data_dir: Path, decision_id: str) -> dict[str, Any]:
    log = AuditLog.open(data_dir, readonly=True)
    try:
        return {r.kind: r.payload for r in log.decision(decision_id)}
    finally:
        log.close()


def _cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _verified(data_dir: Path) -> None:
    verified = json.loads(_cli("audit", "verify", "--json", "--data-dir", str(data_dir)))
    assert verified["ok"] is True, verified


def _split(tmp_path: Path, answer_with: str) -> tuple[str, str, SimCluster]:
    """Run until the answer is judged, check the split, answer the waiting part with
    `steward approve` or `steward deny` (`answer_with`), and tick until it is resumed."""
    sim = SimCluster.open(tmp_path, SCENARIO)
    with ScriptedServer(responder=answer) as server:
        runtime = Runtime.open(tmp_path, sim, load_default_policy(), planner=planner(server))
        with runtime:
            runtime.start()
            tick_until(runtime, lambda: bool(runtime.ctx.audit.records(kind="deliberation")))
            (found,) = runtime.ctx.audit.records(kind="deliberation")
            deliberated = found.payload
            assert isinstance(deliberated, DeliberationRecord)
            first = deliberated.decision_id
            (waiting,) = runtime.ctx.inbox.listed("waiting")
            part = waiting.decision_id
            assert part != first
            assert [a.describe() for a in waiting.actions] == [DRAIN]
            assert not any(n.cordoned for n in sim.observe().nodes)  # the drain has not run

            if answer_with == "approve":
                _cli("approve", part, "--as", OWNER, "--data-dir", str(tmp_path))
            else:
                _cli("deny", part, "--as", OWNER, "--reason", "not tonight",
                     "--data-dir", str(tmp_path))  # fmt: skip
            tick_until(runtime, lambda: "outcome" in _records(tmp_path, part), limit=20)
            for _ in range(8):  # a drain is a long action: let it finish
                runtime.tick(15.0)
    return first, part, sim


def _check_answer_ran_at_once(tmp_path: Path, first: str, part: str) -> None:
    """The answer's decision: only the scale-up, judged and run on the judging tick; its
    rationale names the waiting part, whose own records hold only the drain."""
    ran = _records(tmp_path, first)
    intent, execution, outcome = ran["intent"], ran["execution"], ran["outcome"]
    assert isinstance(intent, Intent) and isinstance(execution, Execution)
    assert isinstance(outcome, Outcome)
    assert [(p.action.describe(), p.verdict) for p in intent.proposals] == [(SCALE, "allow")]
    assert f"waiting as decision {part}" in intent.rationale
    assert execution.observed_at == intent.observed_at  # the very tick, not after a wait
    assert [(o.executed, o.ok) for o in outcome.results] == [(True, True)]
    assert "approval" not in ran

    waited = _records(tmp_path, part)
    waiting_intent = waited["intent"]
    assert isinstance(waiting_intent, Intent)
    assert [(p.action.describe(), p.verdict) for p in waiting_intent.proposals] == [
        (DRAIN, "needs_approval")
    ]
    assert f"split from decision {first}" in waiting_intent.rationale
    assert waiting_intent.planner == "llm" and waiting_intent.model == "scripted-model"


def test_the_allowed_part_runs_now_and_the_drain_only_once_approved(tmp_path: Path) -> None:
    first, part, sim = _split(tmp_path, "approve")
    _check_answer_ran_at_once(tmp_path, first, part)
    waited = _records(tmp_path, part)
    outcome = waited["outcome"]
    assert isinstance(outcome, Outcome)
    assert [o.executed for o in outcome.results] == [True]
    assert waited["approval"].principal == OWNER
    render = next(n for n in sim.observe().nodes if n.name == "render-1")
    assert render.cordoned  # drained
    _verified(tmp_path)


def test_a_denied_drain_never_runs_and_the_scale_up_stands(tmp_path: Path) -> None:
    first, part, sim = _split(tmp_path, "deny")
    _check_answer_ran_at_once(tmp_path, first, part)
    outcome = _records(tmp_path, part)["outcome"]
    assert isinstance(outcome, Outcome)
    assert [o.executed for o in outcome.results] == [False]
    after = sim.observe()
    assert not any(n.cordoned for n in after.nodes)
    burst = next(w for w in after.workloads if w.name == "burst-llm")
    assert burst.desired_replicas == 1
    _verified(tmp_path)


def _mixed(kind: QuestionKind) -> tuple[Decision, tuple[Verdict, ...]]:
    """A decision judging an answer to a `kind` question: a scale-down the guard allows and a
    scale-up that needs approval."""
    down = ScaleWorkload(workload="render", replicas=0)
    up = ScaleWorkload(workload="burst-llm", replicas=2)
    plan = Plan(actions=(down, up), rationale="lend render's card to burst", planner="llm")
    asked = Deliberated(
        deliberation_id="d-000000000001",
        question=Question(kind=kind, key=f"{kind}:render/burst"),
        asked_at=datetime(2026, 3, 2, tzinfo=UTC),
        plan=plan,
    )
    d = Decision(decision_id="d-000000000001", deliberation=asked, plan=plan)
    verdicts = (
        Verdict(index=0, action=down, decision="allow", rule_ids=(), message="allowed"),
        Verdict(index=1, action=up, decision="needs_approval", rule_ids=(), message="ask"),
    )
    return d, verdicts


def test_answers_whose_actions_go_together_are_never_split() -> None:
    for kind in ("rotation", "lending"):
        d, verdicts = _mixed(kind)
        assert splits(d, verdicts) is None, kind  # they wait, or run, as one
    d, verdicts = _mixed("marked")
    split = splits(d, verdicts)
    assert split is not None
    assert [v.action.describe() for v in split.verdicts] == ["scale render to 0 replica(s)"]
    assert [v.index for v in split.verdicts] == [0]
    assert [a.describe() for a in split.waiting.plan.actions] == ["scale burst-llm to 2 replica(s)"]
    assert split.waiting.split_from == d.decision_id != split.waiting.decision_id
