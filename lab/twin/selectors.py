"""Label and field selectors, parsed as the API server parses them.

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by
commas. Field selectors: `path=v`, `path==v`, `path!=v` on dotted paths of the object
(`metadata.name`, `spec.nodeName`, `status.phase`, `involvedObject.name`, ...). A selector that
does not parse is a 400, as on a real cluster.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Match = Callable[[Obj], bool]


class SelectorError(ValueError):
    """A selector that does not parse (the API answers 400)."""


_SET = re.compile(r"^\s*(!?)([A-Za-z0-9./_-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9./_-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def label_matcher(text: str | None) -> Match:
    """A predicate over objects for a label selector (None or "" matches everything)."""
    if not text:
        return lambda _obj: True
    tests = [_requirement(part) for part in _split(text)]

    def match(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(t(labels) for t in tests)

    return match


def _requirement(part: str) -> Callable[[dict[str, str]], bool]:
    eq = _EQ.match(part)
    if eq:
        key, op, value = eq.groups()
        if op == "!=":
            return lambda lb: lb.get(key) != value
        return lambda lb: lb.get(key) == value
    st = _SET.match(part)
    if not st:
        raise SelectorError(f"unable to parse requirement: {part.strip()!r}")
    neg, key, op, values = st.groups()
    if op:
        wanted = frozenset(v.strip() for v in values.split(",") if v.strip())
        if op == "in":
            return lambda lb: lb.get(key) in wanted
        return lambda lb: lb.get(key) not in wanted
    if neg:
        return lambda lb: key not in lb
    return lambda lb: key in lb


def field_value(obj: Obj, path: str) -> str:
    """The value at a dotted path as the field selector compares it ("" when absent)."""
    cur: Any = obj
    for key in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(key)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def field_matcher(text: str | None) -> Match:
    if not text:
        return lambda _obj: True
    tests: list[tuple[str, bool, str]] = []
    for part in _split(text):
        eq = _EQ.match(part)
        if not eq:
            raise SelectorError(f"invalid field selector: {part.strip()!r}")
        path, op, value = eq.groups()
        tests.append((path, op != "!=", value))

    def match(obj: Obj) -> bool:
        return all((field_value(obj, p) == v) == want for p, want, v in tests)

    return match
