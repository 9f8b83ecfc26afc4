"""The STEWARD_* variables: which key of steward.yaml each one sets, and which ones set nothing.

Every key of the configuration, at any depth, has a variable: its path joined by `__`, as
pydantic-settings spells nesting (`metrics.prometheus.url` is `STEWARD_METRICS__PROMETHEUS__URL`,
`kubernetes.leader_election.lease_duration_s` is
`STEWARD_KUBERNETES__LEADER_ELECTION__LEASE_DURATION_S`), and the same path joined by single
underscores (`STEWARD_SLACK_CHANNEL`, `STEWARD_LLM_BASE_URL`, `STEWARD_METRICS_PROMETHEUS_URL`),
the spelling the docs always used. A key whose value is a mapping or a list (a whole section, the
metric sources, the approvers) takes JSON. A variable that names a deeper key is laid after one
that names the section holding it.

A STEWARD_* variable that is neither a key nor one of the variables Steward reads elsewhere
(`OTHER_VARIABLES`) is reported by name, with the nearest known spelling: an operator's typo in a
StatefulSet is then seen, not silently ignored.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

PREFIX = "STEWARD_"

OTHER_VARIABLES = frozenset(
    {
        "STEWARD_CONFIG",  # the steward.yaml to read
        "STEWARD_AUDIT_KEY",  # the HMAC key of the decision log's head
        "STEWARD_MODELS",  # extra model catalogues (tools/placement/catalog.py)
        "STEWARD_NAMESPACE",  # the pod's namespace (kubernetes.leader_election.namespace)
        "STEWARD_IDENTITY",  # the pod's name (kubernetes.leader_election.identity)
        "STEWARD_LLM_API_KEY",  # the LLM endpoint's key, never in the file
        "STEWARD_LLM_TEMPERATURE",  # agent/planners/llm/settings.py
        "STEWARD_TEST_CRASH_AT",  # the crash tests' injection point (tools/modes/crash.py)
        "STEWARD_LLM_VENV",  # scripts/llm-server
        "STEWARD_LLM_CACHE",  # scripts/llm-server
        "STEWARD_LLM_SERVER_THREADS",  # scripts/llm-server
        "STEWARD_IMAGE",  # scripts/container
        "STEWARD_BASE_IMAGE",  # scripts/container
        "STEWARD_VENV",  # .ci/run
    }
)


@dataclass(frozen=True)
class Laid:
    """One variable laid over the configuration: its name and the key path it set."""

    name: str
    path: tuple[str, ...]


def key_variables(schema: type[BaseModel]) -> dict[str, tuple[str, ...]]:
    """Every variable name of `schema`'s keys -> the key path it sets (both spellings; a single-
    underscore name two paths would share is left out, its `__` names still work)."""
    names: dict[str, tuple[str, ...]] = {}
    shared: set[str] = set()
    for path, _ in _keys(schema):
        names[PREFIX + "__".join(path).upper()] = path
        single = PREFIX + "_".join(path).upper()
        if single in names and names[single] != path:
            shared.add(single)
        names.setdefault(single, path)
    return {name: path for name, path in names.items() if name not in shared}


def _keys(
    schema: type[BaseModel], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], bool]]:
    """Every key path of `schema`, a section before the keys inside it, and whether it is one."""
    for name, field in schema.model_fields.items():
        if field.exclude:
            continue
        path = (*prefix, name)
        kind = field.annotation
        section = kind if isinstance(kind, type) and issubclass(kind, BaseModel) else None
        yield path, section is not None
        if section is not None:
            yield from _keys(section, path)


def leaves(schema: type[BaseModel]) -> Iterator[tuple[str, ...]]:
    """The paths of the keys that hold values (not sections), in the schema's order."""
    return (path for path, section in _keys(schema) if not section)


def lay(data: dict[str, Any], env: Mapping[str, str], schema: type[BaseModel]) -> list[Laid]:
    """Put the variables naming `schema`'s keys over `data` (a plain document), in place,
    sections before the keys inside them; returns what each variable set."""
    names = key_variables(schema)
    found = sorted(
        ((name, names[name]) for name in env if name in names), key=lambda p: (len(p[1]), p[0])
    )
    laid: list[Laid] = []
    for name, path in found:
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value(env[name])
        laid.append(Laid(name, path))
    return laid


def unknown(env: Mapping[str, str], schema: type[BaseModel]) -> list[str]:
    """One warning per STEWARD_* variable that Steward does not read, with the nearest name."""
    known = set(key_variables(schema)) | OTHER_VARIABLES
    warnings = []
    for name in sorted(env):
        if not name.startswith(PREFIX) or name in known:
            continue
        near = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        hint = f"; did you mean {near[0]}?" if near else ""
        warnings.append(
            f"{name} is not a steward setting and is ignored{hint} "
            "(`steward config show` lists the keys; nested keys join with __, "
            "e.g. STEWARD_METRICS__PROMETHEUS__URL)"
        )
    return warnings


def value(text: str) -> Any:
    """A variable's value: JSON for lists and mappings, else the string (pydantic coerces)."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            return text
    return text


def holds(data: Any, path: tuple[str, ...]) -> bool:
    """Whether a plain document `data` writes the key at `path`."""
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True
