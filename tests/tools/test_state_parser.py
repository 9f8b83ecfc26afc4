"""tools.parsing.StateParser: the state `ClusterState.model_validate_json` gives, validating
only what a version does not already name; bad input named in one line."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from tests.policies.strategies import states
from tests.tools.versioned import versioned
from tools.bases import new_version
from tools.errors import InvalidInput
from tools.model import ClusterState
from tools.parsing import StateParser


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(states())
def test_it_parses_what_validation_parses(state: ClusterState) -> None:
    for text in (state.model_dump_json(), versioned(state).model_dump_json()):
        parsed = StateParser().parse(text)
        full = ClusterState.model_validate_json(text)
        assert parsed == full and parsed.model_dump_json() == full.model_dump_json()


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(states())
def test_a_known_version_is_taken_again_and_a_new_one_validated(state: ClusterState) -> None:
    parser = StateParser()
    first = parser.parse(versioned(state).model_dump_json())
    assert parser.validated == len(first.nodes) + len(first.workloads)
    again = parser.parse(first.model_dump_json())
    assert parser.validated == 0
    assert all(a is b for a, b in zip(again.nodes, first.nodes, strict=True))
    changed = first.nodes[0].model_copy(update={"cordoned": not first.nodes[0].cordoned,
                                                "version": new_version()})  # fmt: skip
    fields = {name: getattr(first, name) for name in ClusterState.model_fields}
    third = parser.parse(
        ClusterState.model_validate(
            {**fields, "nodes": (changed, *first.nodes[1:])}
        ).model_dump_json()
    )
    assert parser.validated == 1
    assert third.nodes[0] == changed and third.nodes[0] is not first.nodes[0]
    unknown = first.nodes[0].model_copy(update={"cordoned": True})  # version "" : validated
    parser.parse(
        ClusterState.model_validate(
            {**fields, "nodes": (unknown, *first.nodes[1:])}
        ).model_dump_json()
    )
    assert parser.validated == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{nope", "feed: not JSON"),
        ("[1]", "feed: a ClusterState is a JSON object, got list"),
        ('{"observed_at": "2026-03-02T00:00:00Z", "nodes": {}}', "feed: nodes: a list"),
        (
            json.dumps({"observed_at": "2026-03-02T00:00:00Z",
                        "nodes": [{"name": "n", "memory_total_bytes": -1}]}),
            "feed: nodes.0.memory_total_bytes: Input should be greater than or equal to 0",
        ),
        ('{"nodes": []}', "feed: observed_at: Field required"),
    ],
)  # fmt: skip
def test_bad_input_is_named_in_one_line(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        StateParser().parse(text, where="feed")
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
