"""The read-only look-ups answer from the decision's observation, fenced, and change nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from agent.planners.llm.lookups import Lookups
from agent.planners.llm.prompts import FENCE_CLOSE, FENCE_OPEN
from agent.planners.llm.tool_calls import parse_call
from agent.signals.model import Signals
from policies.history import History
from policies.model import Policy
from tools.actions import CordonNode, ScaleWorkload
from tools.model import ClusterState


def _ask(lookups: Lookups, name: str, arguments: dict[str, Any]) -> Any:
    answer = lookups.answer(parse_call(name, json.dumps(arguments)))
    assert answer.startswith(FENCE_OPEN) and answer.endswith(FENCE_CLOSE)
    return json.loads(answer[len(FENCE_OPEN) : -len(FENCE_CLOSE)])


def test_a_node_with_its_cards(busy: tuple[ClusterState, Signals], policy: Policy) -> None:
    state, _ = busy
    node = _ask(Lookups(state, policy, None), "get_node", {"name": "ws-1"})

    assert node["name"] == "ws-1" and node["ready"] is True
    assert len(node["cards"]) == 1 and node["cards"][0]["model"] == "RTX PRO 6000 Blackwell"
    assert node["cards"][0]["sharing"].startswith("mps")


def test_a_name_that_does_not_exist_is_an_answer_not_an_error(
    busy: tuple[ClusterState, Signals], policy: Policy
) -> None:
    state, _ = busy
    lookups = Lookups(state, policy, None)

    assert _ask(lookups, "get_workload", {"name": "nope"}) == {"error": "no workload named 'nope'"}
    assert "error" in _ask(lookups, "get_memory_fit", {"model": "no-such-model", "context": 8192})


def test_memory_fit_and_placement(busy: tuple[ClusterState, Signals], policy: Policy) -> None:
    state, _ = busy
    lookups = Lookups(state, policy, None)

    fit = _ask(
        lookups,
        "get_memory_fit",
        {"model": "glm-5.3-flash", "context": 1_048_576, "mode": "cluster"},
    )
    placed = _ask(lookups, "get_placement", {"workload": "burst-llm"})

    assert fit["largest_context"] > 0 and isinstance(fit["fits"], bool)
    assert placed["candidates"] and placed["candidates"][0]["nodes"] == ["render-1"]


def test_history_newest_first_and_the_policy(
    busy: tuple[ClusterState, Signals], policy: Policy
) -> None:
    state, _ = busy
    at = state.observed_at
    history = (
        History()
        .record(CordonNode(node="gx10-a"), at - timedelta(minutes=30))
        .record(ScaleWorkload(workload="burst-llm", replicas=1), at - timedelta(minutes=5))
    )
    lookups = Lookups(state, policy, lambda: history)

    recent = _ask(lookups, "get_history", {"limit": 1})
    brief = _ask(lookups, "get_policy", {})

    assert [e["action"] for e in recent["executed"]] == ["scale burst-llm to 1 replica(s)"]
    assert brief["protected"] == ["tts"] and brief["pools"]["burst"]["max_cards"] == 2
    assert "cooldowns" in brief
