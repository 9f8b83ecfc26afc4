"""Checkpoints and journals written before the approval model moved still load.

Earlier versions checkpointed a waiting decision's answer as `agent.loop.state.Approval` with
the principal under `by`, and rotation journals wrote it with the channel under `via`; a decision
that waits across an upgrade must resume with the same answer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import ormsgpack

from agent.loop.graph import open_checkpointer
from tools.approval import Approval
from tools.modes import RotationPlan

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
_PYDANTIC_V2 = 5  # langgraph's msgpack extension code for a pydantic v2 model


class _Ext:
    """A msgpack extension kept as it was read, to be written back unchanged (a plain class:
    ormsgpack would write a dataclass out as a map)."""

    def __init__(self, code: int, data: bytes) -> None:
        self.code, self.data = code, data


def _pack(obj: object) -> bytes:
    return ormsgpack.packb(obj, default=lambda e: ormsgpack.Ext(e.code, e.data))


def _as_written_before(blob: bytes) -> bytes:
    """`blob` (one checkpointed Approval) as an earlier version wrote it."""
    outer: dict[str, Any] = ormsgpack.unpackb(blob, ext_hook=_Ext)
    ext = outer["approval"]
    module, name, kwargs, method = ormsgpack.unpackb(ext.data, ext_hook=_Ext)
    assert (module, name) == ("tools.approval", "Approval")
    kwargs["by"] = kwargs.pop("principal")
    old = _pack(["agent.loop.state", name, kwargs, method])
    return _pack({"approval": _Ext(_PYDANTIC_V2, old)})


def test_an_answer_checkpointed_by_an_earlier_version_resumes(tmp_path: Path) -> None:
    serde = open_checkpointer(tmp_path).serde
    answer = Approval(principal="homelab-owner", at=AT, channel="slack", sender="U1", reason="ok")
    kind, blob = serde.dumps_typed({"approval": answer})
    loaded = serde.loads_typed((kind, _as_written_before(blob)))
    assert loaded == {"approval": answer}


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
