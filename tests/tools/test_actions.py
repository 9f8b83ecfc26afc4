"""The Action union: one pydantic model per action is the only source of its shape."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tools.actions import (
    ACTION_TYPES,
    NoOp,
    Plan,
    ScaleWorkload,
    action_schemas,
    dump_action,
    parse_action,
    parse_action_json,
    type_tag,
)


def test_every_action_has_a_schema_without_its_tag() -> None:
    schemas = action_schemas()
    assert set(schemas) == {type_tag(m) for m in ACTION_TYPES}
    scale = schemas["scale_workload"]
    assert "type" not in scale["properties"]
    assert scale["properties"]["replicas"]["minimum"] == 0
    assert set(scale["required"]) == {"workload", "replicas"}
    assert scale["additionalProperties"] is False


def test_round_trip_through_json() -> None:
    action = ScaleWorkload(workload="render", replicas=0, reason="idle 10 min")
    assert parse_action(dump_action(action)) == action
    assert parse_action_json(action.model_dump_json()) == action
    assert action.target == "render"
    assert action.describe() == "scale render to 0 replica(s)"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"type": "scale_workload", "workload": "x", "replicas": -1}, "replicas"),
        ({"type": "scale_workload", "workload": "x", "replicas": "many"}, "replicas"),
        ({"type": "scale_workload", "workload": "x", "replicas": 1, "force": True}, "force"),
        ({"type": "scale_workload", "workload": "../../etc", "replicas": 1}, "workload"),
        ({"type": "delete_cluster"}, "type"),
        ({"type": "noop", "reason": ""}, "reason"),
    ],
)
def test_invalid_actions_are_refused_naming_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_action(data)
    assert field in str(caught.value)


def test_a_plan_carries_typed_actions() -> None:
    plan = Plan.model_validate(
        {"actions": [{"type": "noop", "reason": "quiet"}], "rationale": "nothing queued"}
    )
    assert plan.actions == (NoOp(reason="quiet"),)
