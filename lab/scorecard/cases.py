"""Eval cases: the scenario files of lab/cases/, each with the policy it is judged under.

A case is a scenario (lab.sim.scenario) with `expect:`; its `policy:` mapping is laid over
policies/default.yaml key by key (a mapping merges into a mapping, anything else replaces), and
the result is checked like any policy file, so a case that asks for an impossible policy is
refused before it runs with the case's file named.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from lab.sim.scenario import Scenario, load_scenario
from policies.loader import DEFAULT_POLICY, parse_policy
from policies.model import Policy
from tools.errors import InvalidInput

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"


@dataclass(frozen=True)
class Case:
    path: Path
    scenario: Scenario
    policy: Policy

    @property
    def name(self) -> str:
        return self.scenario.name

    @property
    def category(self) -> str:
        return self.scenario.category or "uncategorised"

    @property
    def difficulty(self) -> str:
        return self.scenario.difficulty or "unrated"


def load_case(path: Path) -> Case:
    """One case file, its scenario checked and its policy built; InvalidInput naming the file."""
    scenario = load_scenario(path)
    if scenario.expect is None:
        raise InvalidInput(f"{path}:1:1: expect: an eval case needs an `expect:` block")
    return Case(path=path, scenario=scenario, policy=case_policy(scenario, path))


def load_cases(directory: Path, category: str | None = None) -> list[Case]:
    """Every `*.yaml` case under `directory` (sorted by path; or one case file), optionally of
    one category."""
    if directory.is_file():
        files = [directory]
    elif not directory.is_dir():
        raise InvalidInput(f"--cases {directory}: no such file or directory")
    else:
        files = sorted(directory.rglob("*.yaml"))
    if not files:
        raise InvalidInput(f"--cases {directory}: no *.yaml case files there")
    cases = [load_case(f) for f in files]
    names: dict[str, Path] = {}
    for case in cases:
        if case.name in names:
            raise InvalidInput(
                f"{case.path}: name {case.name!r} is already used by {names[case.name]}; "
                "give every case its own name"
            )
        names[case.name] = case.path
    if category is not None:
        cases = [c for c in cases if c.category == category]
        if not cases:
            known = ", ".join(sorted({c.category for c in load_cases(directory)}))
            raise InvalidInput(f"--category {category!r}: no case has it (known: {known})")
    return cases


SHIPPED = {"default": DEFAULT_POLICY, "fleet": DEFAULT_POLICY.parent / "examples" / "fleet.yaml"}


def case_policy(scenario: Scenario, path: Path) -> Policy:
    """The case's base policy with its `policy:` changes laid over it."""
    base_path = SHIPPED.get(scenario.policy_base) or path.parent / scenario.policy_base
    try:
        text = base_path.read_text()
    except OSError as exc:
        raise InvalidInput(
            f"{path}: policy_base {scenario.policy_base!r}: cannot read {base_path}: "
            f"{exc.strerror} (use default, fleet or a file next to the case)"
        ) from None
    if not scenario.policy:
        return parse_policy(text, file=str(base_path))
    merged = _merge(YAML(typ="safe").load(text), scenario.policy)
    # JSON is YAML: the policy loader reads it as it reads the file (dates and times as text).
    flat = json.dumps(merged, indent=1, default=str)
    return parse_policy(flat, file=f"{path} (policy: over {base_path.name})")


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        merged = dict(base)
        for key, value in over.items():
            merged[key] = _merge(base.get(key), value) if key in base else value
        return merged
    return over
