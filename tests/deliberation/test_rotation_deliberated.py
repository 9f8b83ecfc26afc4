"""A rotation is a question of judgment: with a model configured the tick does not run the
rules' rotation, the model deliberates it beside the loop, and its answer runs only after the
guard judged it on a fresh observation — or, when demand changed meanwhile, not at all."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from agent.audit import DeliberationRecord, Execution, Intent, transcripts
from agent.daemon.runtime import Runtime
from lab.scripted_server import Reply, ScriptedServer, submit
from lab.sim.backend import SimCluster
from policies.loader import load_default_policy
from tests.deliberation.conftest import planner, scenario, tick_until

ROTATE = [{"type": "rotate_mode", "target_mode": "split", "reason": "split serves 170 tok/s"}]


def _asked_rotation(body: dict[str, Any]) -> bool:
    return any("rotate the node pair" in str(m.get("content")) for m in body.get("messages", []))


def _active(sim: SimCluster) -> str | None:
    mode = sim.observe().active_mode
    return mode.name if mode is not None else None


def _deliberations(runtime: Runtime) -> list[DeliberationRecord]:
    return [
        r.payload
        for r in runtime.ctx.audit.records(kind="deliberation")
        if isinstance(r.payload, DeliberationRecord)
    ]


def test_a_deliberated_rotation_runs_after_the_guard_judged_a_fresh_observation(
    tmp_path: Path,
) -> None:
    asked: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        asked.append(body)
        assert _asked_rotation(body), "the stub is asked only the rotation"
        return submit(ROTATE, "split wins: two models at once serve the queue")

    sim = SimCluster.open(tmp_path, scenario())
    with ScriptedServer(responder=model) as server:
        runtime = Runtime.open(tmp_path, sim, load_default_policy(), planner=planner(server))
        with runtime:
            runtime.start()
            tick_until(runtime, lambda: bool(_deliberations(runtime)))
            (record,) = _deliberations(runtime)
            decision = runtime.ctx.audit.decision(record.decision_id)
            tick_until(runtime, lambda: _active(sim) == "split", limit=200)

    assert len(asked) == 1, "one question, asked once, while the rules proposed it every tick"
    tools = [t["function"]["name"] for t in asked[0]["tools"]]
    assert "submit_plan" in tools
    assert record.outcome == "planned" and record.question == "rotation"
    assert [a.type for a in record.actions] == ["rotate_mode"]
    intent = next(r.payload for r in decision if isinstance(r.payload, Intent))
    execution = next(r.payload for r in decision if isinstance(r.payload, Execution))
    assert intent.planner == "llm" and intent.model == "scripted-model"
    # Judged on an observation made after the question was asked, and allowed.
    assert record.judged_at is not None and record.judged_at > record.asked_at
    assert execution.observed_at > record.asked_at
    assert [v.verdict for v in execution.verdicts] == ["allow"]
    assert record.transcript_digest is not None
    kept = transcripts.load(tmp_path, record.transcript_digest)
    assert json.dumps(kept).count("submit_plan") >= 1


def test_an_answer_after_demand_changed_is_superseded_and_nothing_runs(tmp_path: Path) -> None:
    release = threading.Event()

    def late_model(body: dict[str, Any]) -> Reply:
        release.wait(120)
        return submit(ROTATE, "split wins")

    sim = SimCluster.open(tmp_path, scenario())
    with ScriptedServer(responder=late_model) as server:
        runtime = Runtime.open(
            tmp_path, sim, load_default_policy(), planner=planner(server, deadline_s=120)
        )
        with runtime:
            runtime.start()
            deliberations = runtime.ctx.deliberations
            assert deliberations is not None
            for _ in range(400):  # until the question is asked
                runtime.tick(15.0)
                if deliberations.busy:
                    break
            assert deliberations.busy
            # The burst ends; ticks go on while the model thinks, until demand no longer
            # favours split.
            for _ in range(400):
                runtime.tick(15.0)
                if runtime.ctx.memory.mode_favoured is None:
                    break
            assert runtime.ctx.memory.mode_favoured is None
            release.set()
            tick_until(runtime, lambda: bool(_deliberations(runtime)), limit=20)
            (record,) = _deliberations(runtime)
            decision = runtime.ctx.audit.decision(record.decision_id)

    assert record.outcome == "superseded"
    assert [a.type for a in record.actions] == ["rotate_mode"]
    assert not [r for r in decision if isinstance(r.payload, Intent | Execution)]
    assert _active(sim) == "cluster"
