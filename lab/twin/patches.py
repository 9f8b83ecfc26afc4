"""The three patch types kubectl and the client send: JSON merge, strategic merge, JSON patch.

Strategic merge is JSON merge plus the list semantics of the built-in types that matter here:
lists of objects with a merge key (`name` for containers, env and ports; `type` for conditions;
`key` for taints... ) merge element by element, and `$patch: delete` / `$retainKeys` are
honoured in their common forms. Anything else merges as JSON merge patch does.
"""

from __future__ import annotations

import copy
from typing import Any

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"

_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "ports": "containerPort",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "conditions": "type",
    "ownerReferences": "uid",
    "tolerations": "key",
}


class PatchError(ValueError):
    """A patch that cannot be applied (the API answers 422, or 400 for bad JSON)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge_patch(target: Any, patch: Any, field: str = "") -> Any:
    if isinstance(patch, list):
        key = _MERGE_KEYS.get(field)
        if key is None or not isinstance(target, list):
            return copy.deepcopy([p for p in patch if not _is_directive(p)])
        out = [copy.deepcopy(t) for t in target]
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                out.append(copy.deepcopy(item))
                continue
            at = next((i for i, t in enumerate(out) if t.get(key) == item[key]), None)
            if item.get("$patch") == "delete":
                if at is not None:
                    out.pop(at)
            elif at is None:
                out.append(copy.deepcopy(item))
            else:
                out[at] = strategic_merge_patch(out[at], item)
        return out
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    for k, value in patch.items():
        if k.startswith("$"):
            continue  # $retainKeys, $setElementOrder: ordering hints only here
        if value is None:
            result.pop(k, None)
        else:
            result[k] = strategic_merge_patch(result.get(k), value, k)
    return result


def _is_directive(item: Any) -> bool:
    return isinstance(item, dict) and "$patch" in item


def json_patch(target: Any, ops: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise PatchError("a JSON patch is a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], _pointer(op["path"])
        if kind == "test":
            if _get(doc, path) != op.get("value"):
                raise PatchError(f"test failed at {op['path']}")
        elif kind == "remove":
            _remove(doc, path)
        elif kind in ("add", "replace"):
            if kind == "replace":
                _get(doc, path)  # must exist
            doc = _add(doc, path, copy.deepcopy(op.get("value")), replace=kind == "replace")
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = copy.deepcopy(_get(doc, source))
            if kind == "move":
                _remove(doc, source)
            doc = _add(doc, path, value, replace=False)
        else:
            raise PatchError(f"unknown JSON patch operation {kind!r}")
    return doc


def _pointer(text: str) -> list[str]:
    if text == "":
        return []
    if not text.startswith("/"):
        raise PatchError(f"invalid JSON pointer {text!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]


def _get(doc: Any, path: list[str]) -> Any:
    cur = doc
    for part in path:
        if isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError) as exc:
                raise PatchError(f"no element {part} in the list") from exc
        elif isinstance(cur, dict) and part in cur:
            cur = cur[part]
        else:
            raise PatchError(f"path /{'/'.join(path)} does not exist")
    return cur


def _add(doc: Any, path: list[str], value: Any, *, replace: bool) -> Any:
    if not path:
        return value
    parent = _get(doc, path[:-1])
    last = path[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            i = int(last)
            if replace:
                parent[i] = value
            else:
                parent.insert(i, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError(f"cannot add below a scalar at /{'/'.join(path)}")
    return doc


def _remove(doc: Any, path: list[str]) -> None:
    if not path:
        raise PatchError("cannot remove the whole document")
    parent = _get(doc, path[:-1])
    last = path[-1]
    try:
        if isinstance(parent, list):
            parent.pop(int(last))
        else:
            del parent[last]
    except (KeyError, IndexError, ValueError) as exc:
        raise PatchError(f"path /{'/'.join(path)} does not exist") from exc


def apply(content_type: str, target: Any, patch: Any) -> Any:
    """Apply a patch of the given content type; raises PatchError."""
    ctype = content_type.split(";", maxsplit=1)[0].strip()
    if ctype == MERGE:
        return merge_patch(target, patch)
    if ctype == STRATEGIC:
        return strategic_merge_patch(target, patch)
    if ctype == JSON_PATCH:
        return json_patch(target, patch)
    raise PatchError(f"the twin does not support patch type {ctype!r} (use merge or json)")
