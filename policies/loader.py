"""Reading a policy file: YAML with line and column kept, every problem reported at once.

`load_policy(path)` returns a `Policy` or raises `PolicyError` whose problems read
`FILE:LINE:COL: message` — YAML syntax, unknown keys, wrong types, missing fields and
contradictions (min_cards > max_cards, an approver group that does not exist). Positions come
from ruamel.yaml's round-trip loader, which remembers where every key and value was written.
Contradictions are looked for once the file is well-formed, so a file with both kinds of problem
shows its structural ones first.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml.comments import CommentedMap

from policies.errors import PolicyError, Problem
from policies.model import Policy
from tools.yamlbounds import parse_mapping, read_text
from tools.yamldoc import YamlProblem, position, schema_problem

DEFAULT_POLICY = Path(__file__).with_name("default.yaml")
EXAMPLES_DIR = Path(__file__).with_name("examples")


def load_policy(path: Path | str) -> Policy:
    """Read, validate and return the policy at `path`; PolicyError lists every problem."""
    path = Path(path)
    try:
        text = read_text(path, str(path), "the policy file")
    except YamlProblem as exc:
        raise PolicyError([exc.problem]) from exc
    except OSError as exc:
        problem = Problem(str(path), 1, 1, f"cannot read the file: {exc.strerror}")
        raise PolicyError([problem]) from exc
    except UnicodeDecodeError as exc:
        problem = Problem(
            str(path), 1, 1, f"not UTF-8 text ({_encoding_hint(exc)}); save it as UTF-8"
        )
        raise PolicyError([problem]) from exc
    return parse_policy(text, str(path))


def _encoding_hint(exc: UnicodeDecodeError) -> str:
    start = exc.object[:2] if isinstance(exc.object, bytes) else b""
    if start in (b"\xff\xfe", b"\xfe\xff"):
        return "it looks like UTF-16"
    return f"byte {exc.object[exc.start]:#04x} at offset {exc.start}"


def load_default_policy() -> Policy:
    """The homelab policy shipped with Steward (policies/default.yaml)."""
    return load_policy(DEFAULT_POLICY)


def parse_policy(text: str, file: str = "<policy>") -> Policy:
    """Validate policy YAML given as text; `file` names it in problems."""
    try:
        data = parse_mapping(
            text, file, "a policy is a mapping of keys such as pools, budget, approvals"
        )
    except YamlProblem as exc:
        raise PolicyError([exc.problem]) from exc
    try:
        policy = Policy.model_validate(data, context={"defer_contradictions": True})
    except ValidationError as exc:
        raise PolicyError([_problem(file, data, err) for err in exc.errors()]) from exc
    problems = [
        Problem(file, *position(data, path, key=path[-1] == "name"), message)
        for path, message in policy.contradictions()
    ]
    if problems:
        raise PolicyError(problems)
    return policy


def _problem(file: str, root: CommentedMap, err: Any) -> Problem:
    return schema_problem(file, root, err, Policy)
