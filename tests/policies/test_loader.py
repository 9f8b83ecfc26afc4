"""Policy files: every problem reported at once as FILE:LINE:COL: message."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from policies.errors import PolicyError
from policies.loader import DEFAULT_POLICY, EXAMPLES_DIR, load_policy, parse_policy

DEFAULT_TEXT = DEFAULT_POLICY.read_text()


def problems(text: str, file: str = "p.yaml") -> list[str]:
    with pytest.raises(PolicyError) as caught:
        parse_policy(text, file)
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize("path", [DEFAULT_POLICY, *sorted(EXAMPLES_DIR.glob("*.yaml"))])
def test_shipped_policies_load(path: Path) -> None:
    policy = load_policy(path)
    assert policy.pools


def test_the_default_policy_says_what_the_homelab_needs() -> None:
    policy = load_policy(DEFAULT_POLICY)
    assert policy.pools["render"].min_cards == 0
    assert policy.pools["render"].idle_before_zero == timedelta(minutes=10)
    assert policy.pools["gx10"].min_ready_replicas == 1
    assert policy.change_budget.actions_per_hour == 12
    rotate = next(r for r in policy.approvals if r.name == "rotate_working_hours")
    assert rotate.window is not None and rotate.window.describe() == "08:00-20:00"
    assert policy.rotation.expected_gid_index == 3
    assert policy.timezone == "Europe/Madrid"


def test_min_above_max_names_file_line_and_column() -> None:
    text = DEFAULT_TEXT.replace(
        "    min_cards: 0\n    max_cards: 2\n    priority: 60",
        "    min_cards: 3\n    max_cards: 2\n    priority: 60",
    )
    line = text.splitlines().index("    min_cards: 3") + 2  # max_cards is on the next line
    assert problems(text, "default.yaml") == [
        f"default.yaml:{line}:16: pools.render.max_cards (2) is below min_cards (3); "
        "raise max_cards or lower min_cards"
    ]


def test_an_unknown_key_appended_at_the_end() -> None:
    text = DEFAULT_TEXT + "surprise: true\n"
    line = len(text.splitlines())
    (only,) = problems(text, "default.yaml")
    assert only.startswith(f"default.yaml:{line}:1: unknown key 'surprise' in the top level")


def test_every_problem_at_once_in_file_order() -> None:
    text = "\n".join(
        [
            "timezone: Mars/Olympus",
            "pools:",
            "  render:",
            "    max_cards: two",
            "    idle_before_zero: 10 minutes",
            "  gx10:",
            "    min_cards: 1",
            "    colour: blue",
            "budget: {total_cards: -1}",
        ]
    )
    found = problems(text)
    assert [p.split(":")[1:3] for p in found] == [
        ["1", "11"], ["4", "16"], ["5", "23"], ["6", "3"], ["8", "5"], ["9", "23"],
    ]  # fmt: skip
    assert "unknown time zone 'Mars/Olympus'" in found[0]
    assert "pools.render.max_cards: Input should be a valid integer" in found[1]
    assert "'10 minutes' is not a duration" in found[2]
    assert "pools.gx10.max_cards: required but missing" in found[3]
    assert "unknown key 'colour' in pools.gx10; allowed keys: gpu_models" in found[4]


def test_yaml_syntax_errors_have_a_place() -> None:
    (only,) = problems("pools:\n  render: [1, 2\n  gx10: {}\n")
    assert only.startswith("p.yaml:3:")
    assert "YAML syntax" in only


def test_duplicate_keys_are_refused() -> None:
    (only,) = problems("pools:\n  render: {max_cards: 1}\n  render: {max_cards: 2}\n")
    assert "YAML syntax" in only and "duplicate key" in only


def test_an_approver_group_that_does_not_exist() -> None:
    text = DEFAULT_TEXT.replace("approvers: [owners, operators]", "approvers: [owners, wizards]")
    (only,) = problems(text)
    line = text.splitlines().index("    approvers: [owners, wizards]") + 1
    assert only == (
        f"p.yaml:{line}:25: approver group 'wizards' of approval rule 'drain_any_node' does not "
        "exist (groups: operators, owners); define it under approvers.groups"
    )


def test_contradictions_are_all_reported() -> None:
    text = "\n".join(
        [
            "pools:",
            "  a: {min_cards: 4, max_cards: 2}",
            "  b: {max_cards: 0, min_ready_replicas: 1}",
            "budget: {total_cards: 3}",
            "slo: {c: {queue_wait_s: 5}}",
        ]
    )
    found = problems(text)
    assert len(found) == 4
    assert any("pools.b must keep 1 ready replica(s) but max_cards is 0" in p for p in found)
    assert any("budget.total_cards (3) is below the pools' min_cards together (4)" in p
               for p in found)  # fmt: skip
    assert any("slo names pool 'c', which has no policy" in p for p in found)


def test_a_document_that_is_not_a_mapping() -> None:
    assert problems("- a\n- b\n") == [
        "p.yaml:1:1: a policy is a mapping of keys such as pools, budget, approvals"
    ]


def test_a_missing_file() -> None:
    with pytest.raises(PolicyError) as caught:
        load_policy("/nonexistent/policy.yaml")
    assert str(caught.value).startswith("/nonexistent/policy.yaml:1:1: cannot read the file")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("10m", 600), ("1h30m", 5400), ("2d", 172800), ("0.5m", 30)],
)
def test_durations(text: str, seconds: int) -> None:
    policy = parse_policy(f"pools: {{r: {{max_cards: 1, idle_before_zero: {text}}}}}")
    assert policy.pools["r"].idle_before_zero == timedelta(seconds=seconds)


def test_a_policy_built_in_code_refuses_contradictions() -> None:
    from pydantic import ValidationError

    from policies.model import Policy

    with pytest.raises(ValidationError, match="is below min_cards"):
        Policy.model_validate({"pools": {"a": {"min_cards": 2, "max_cards": 1}}})
