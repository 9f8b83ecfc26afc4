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
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from policies.errors import PolicyError, Problem
from policies.model import Policy

Loc = tuple[str | int, ...]

DEFAULT_POLICY = Path(__file__).with_name("default.yaml")
EXAMPLES_DIR = Path(__file__).with_name("examples")


def load_policy(path: Path | str) -> Policy:
    """Read, validate and return the policy at `path`; PolicyError lists every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        problem = Problem(str(path), 1, 1, f"cannot read the file: {exc.strerror}")
        raise PolicyError([problem]) from exc
    return parse_policy(text, str(path))


def load_default_policy() -> Policy:
    """The homelab policy shipped with Steward (policies/default.yaml)."""
    return load_policy(DEFAULT_POLICY)


def parse_policy(text: str, file: str = "<policy>") -> Policy:
    """Validate policy YAML given as text; `file` names it in problems."""
    try:
        data = YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        message = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        raise PolicyError([Problem(file, line, col, f"YAML syntax: {message}")]) from exc
    except YAMLError as exc:
        raise PolicyError([Problem(file, 1, 1, f"YAML syntax: {exc}")]) from exc
    if not isinstance(data, CommentedMap):
        raise PolicyError(
            [Problem(file, 1, 1, "a policy is a mapping of keys such as pools, budget, approvals")]
        )
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
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    if kind == "extra_forbidden":
        line, col = position(root, loc, key=True)
        return Problem(file, line, col, f"unknown key {loc[-1]!r} in {_parent(loc)}; {_hint(loc)}")
    if kind == "missing":
        line, col = position(root, loc[:-1], key=True)
        return Problem(file, line, col, f"{dotted}: required but missing")
    line, col = position(root, loc)
    message = str(err["msg"]).removeprefix("Value error, ")
    return Problem(file, line, col, f"{dotted}: {message} (got {_shown(err.get('input'))})")


def position(root: CommentedMap, loc: Loc, key: bool = False) -> tuple[int, int]:
    """1-based line and column of the value at `loc` (of its key when `key`), or the nearest
    enclosing place that exists in the document."""
    node: Any = root
    line, col = 1, 1
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, CommentedMap) and part in node:
            where = node.lc.key(part) if (key and last) else node.lc.value(part)
            line, col = where[0] + 1, where[1] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            where = node.lc.item(part)
            line, col = where[0] + 1, where[1] + 1
            node = node[part]
        else:
            break
    return line, col


def _parent(loc: Loc) -> str:
    return ".".join(str(p) for p in loc[:-1]) or "the top level"


def _hint(loc: Loc) -> str:
    allowed = _allowed_keys(loc[:-1])
    return f"allowed keys: {', '.join(allowed)}" if allowed else "remove it"


def _allowed_keys(parent: Loc) -> list[str]:
    """The field names of the schema part at `parent`, for an unknown-key message."""
    annotation: Any = Policy
    for part in parent:
        annotation = _step(_unwrap(annotation), part)
        if annotation is None:
            return []
    model = _unwrap(annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(model.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    """`X | None` -> X (every optional part of the schema holds one type)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) in (Union, UnionType) and len(args) == 1:
        return args[0]
    return annotation


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation one step into `annotation`: a model's field, a dict value, a tuple item."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        field = annotation.model_fields.get(part) if isinstance(part, str) else None
        return field.annotation if field is not None else None
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is dict and len(args) == 2:
        return args[1]
    if origin is tuple and args:
        return args[0]
    return None


def _shown(value: Any) -> str:
    if isinstance(value, CommentedMap | dict):
        return "a mapping"
    if isinstance(value, CommentedSeq | list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
