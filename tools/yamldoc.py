"""YAML documents that remember where everything was written: for errors that say FILE:LINE:COL.

Policies, scenarios and steward.yaml are all read the same way (tools.yamlbounds.parse_mapping):
ruamel.yaml's round-trip loader keeps the line and column of every key and value, and a pydantic
validation error is turned here into one `Problem` per error, at the place in the file it is
about, naming the allowed keys when a key is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from tools.errors import InvalidInput

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a file, at a 1-based line and column (line 0: not in a file)."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        if self.line == 0:  # not in a file: an environment variable, say
            return f"{self.file}: {self.message}"
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class YamlProblem(InvalidInput):
    """A document that is not YAML, or not a mapping."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        super().__init__(str(problem))


def plain(node: Any) -> Any:
    """The document as plain dicts and lists (what pydantic-settings and JSON want)."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node


def schema_problem(file: str, root: CommentedMap, err: Any, schema: type[BaseModel]) -> Problem:
    """One pydantic error (`ValidationError.errors()` item) of `schema` as a Problem in `file`."""
    loc: Loc = tuple(err["loc"])
    kind = err["type"]
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    if kind == "extra_forbidden":
        line, col = position(root, loc, key=True)
        return Problem(
            file, line, col, f"unknown key {loc[-1]!r} in {_parent(loc)}; {_hint(loc, schema)}"
        )
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


def _hint(loc: Loc, schema: type[BaseModel]) -> str:
    allowed = _allowed_keys(loc[:-1], schema)
    return f"allowed keys: {', '.join(allowed)}" if allowed else "remove it"


def _allowed_keys(parent: Loc, schema: type[BaseModel]) -> list[str]:
    """The field names of the schema part at `parent`, for an unknown-key message."""
    annotation: Any = schema
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
