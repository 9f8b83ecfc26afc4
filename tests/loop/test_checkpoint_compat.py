"""Checkpoints and journals written before the loop's models were merged still load.

Earlier versions checkpointed each verdict without its position and with the action's expected
effect inside it, a waiting decision's answer as `agent.loop.state.Approval` with the principal
under `by`, and rotation journals the answer with its channel under `via`. A decision that waits
across an upgrade must resume with the same verdicts and the same answer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ormsgpack

from agent.loop.graph import open_checkpointer
from agent.loop.state import Decision
from agent.signals.model import Signals, WorkloadSignals
from tools.actions import ScaleWorkload
from tools.approval import Approval
from tools.modes import RotationPlan
from tools.results import Check

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_PYDANTIC_V2 = 5  # langgraph's msgpack extension code for a pydantic v2 model


class _Ext:
    """A msgpack extension kept as it was read, to be written back unchanged (a plain class:
    ormsgpack would write a dataclass out as a map)."""

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def _pack(obj: object) -> bytes:
    return ormsgpack.packb(obj, default=lambda e: ormsgpack.Ext(e.code, e.data))


def _as_written_before(blob: bytes, module: str = "agent.loop.state") -> bytes:
    """`blob` (one checkpointed model under the key "approval") as an earlier version wrote
    it: under `module`, and an Approval's principal under `by`."""
    outer: dict[str, Any] = ormsgpack.unpackb(blob, ext_hook=_Ext)
    ext = outer["approval"]
    _, name, kwargs, method = ormsgpack.unpackb(ext.data, ext_hook=_Ext)
    if name == "Approval":
        kwargs["by"] = kwargs.pop("principal")
    old = _pack([module, name, kwargs, method])
    return _pack({"approval": _Ext(_PYDANTIC_V2, old)})


def test_an_answer_checkpointed_by_an_earlier_version_resumes(tmp_path: Path) -> None:
    serde = open_checkpointer(tmp_path).serde
    answer = Approval(principal="homelab-owner", at=AT, channel="slack", sender="U1", reason="ok")
    kind, blob = serde.dumps_typed({"approval": answer})
    loaded = serde.loads_typed((kind, _as_written_before(blob)))
    assert loaded == {"approval": answer}


def test_signals_checkpointed_before_they_moved_below_the_loop_still_load(tmp_path: Path) -> None:
    serde = open_checkpointer(tmp_path).serde
    signals = Signals(
        observed_at=AT,
        workloads=(
            WorkloadSignals(
                workload="render", pool="render", kind="batch", desired_replicas=1, ready_replicas=1
            ),
        ),
        findings=("render: queue growing",),
    )
    kind, blob = serde.dumps_typed({"approval": signals})
    loaded = serde.loads_typed((kind, _as_written_before(blob)))
    assert loaded == {"approval": signals}


def test_a_rotation_journal_with_via_still_loads() -> None:
    plan = RotationPlan.model_validate(
        {
            "from_mode": "cluster",
            "to_mode": "split",
            "outgoing": {},
            "incoming": {},
            "approvals": [{"principal": "owner", "at": AT.isoformat(), "via": "cli"}],
        }
    )
    assert plan.approvals == (Approval(principal="owner", at=AT, channel="cli"),)


def test_verdicts_checkpointed_by_an_earlier_version_keep_their_effects() -> None:
    scale = ScaleWorkload(workload="burst-llm", replicas=2)
    earlier = {
        "action": scale.model_dump(mode="json"),
        "decision": "needs_approval",
        "rule_ids": ["approval.large_scale_up"],
        "message": "Needs approval by owners",
        "expected_effect": "burst-llm: 1 -> 2 replica(s)",
        "approvers": ["owners"],
    }
    d = Decision.model_validate({"decision_id": "d-1", "verdicts": [earlier]})
    (verdict,) = d.verdicts
    assert verdict.index == 0 and verdict.action == scale
    assert verdict.decision == "needs_approval" and verdict.approvers == ("owners",)
    assert d.expected_effect(0) == "burst-llm: 1 -> 2 replica(s)"
    assert d.waiting == [verdict]


def test_a_verification_checkpointed_under_the_old_module_still_loads(tmp_path: Path) -> None:
    serde = open_checkpointer(tmp_path).serde
    check = Check(name="burst-llm ready replicas", ok=True, detail="2/2")
    kind, blob = serde.dumps_typed({"approval": check})
    loaded = serde.loads_typed((kind, _as_written_before(blob, "agent.audit.records")))
    assert loaded == {"approval": check}
