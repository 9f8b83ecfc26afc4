"""The cluster's mode pairs, links and modes, read from labels (docs/kubernetes.md, "Topology").

The convention, on nodes:
- `steward.dev/mode-pair: NAME`: the two nodes carrying the same NAME form a mode pair, joined
  by a link called NAME (its nodes in name order);
- `steward.dev/link-gbps: "200"`: the link's nominal speed per path, in Gb/s (required on a
  pair's nodes);
- `steward.dev/link-paths: "2"`: how many logical RDMA paths it has (rail-0, rail-1, …; 1 when
  absent);
- `steward.dev/gid-index: "3"`: the RoCE GID index the serving configuration expects
  (NCCL_IB_GID_INDEX; none when absent).
On workloads:
- `steward.dev/mode: MODE` (label): the workloads that together serve MODE on a pair;
- `steward.dev/mode-pair: NAME` (label): which pair, where the cluster has more than one;
- `steward.dev/peak-tok-s` and `steward.dev/single-stream-tok-s` (annotations): each workload's
  measured figures; the mode's peak is their sum, its single stream their mean, its context the
  largest `steward.dev/context-length`.

What the `steward-topology` ConfigMap says (its `modes`, its `links`) overrides what is read here.
A pair of other than two nodes, or a figure that is not a number, is refused naming the objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tools.backends.kubernetes import contract as c
from tools.errors import InvalidInput
from tools.model import Mode

Obj = dict[str, Any]


def _number(where: str, key: str, value: str | None, default: float | None) -> float | None:
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number >= 0:
        raise InvalidInput(f"{where}: {key}={value!r} must be a number >= 0")
    return number


def links_from_labels(nodes: Iterable[Obj]) -> list[Obj]:
    """The links of the labelled mode pairs, in the ConfigMap's shape (`name`, `nodes`, `paths`,
    `configured_gid_index`)."""
    pairs: dict[str, list[Obj]] = {}
    for node in nodes:
        name = (node["metadata"].get("labels") or {}).get(c.MODE_PAIR)
        if name:
            pairs.setdefault(name, []).append(node)
    links = []
    for name, members in sorted(pairs.items()):
        names = sorted(m["metadata"]["name"] for m in members)
        if len(names) != 2:
            raise InvalidInput(
                f"node label {c.MODE_PAIR}={name} is on {len(names)} node(s) "
                f"({', '.join(names)}); a mode pair is two nodes"
            )
        labels = (members[0]["metadata"].get("labels") or {}) | (
            members[1]["metadata"].get("labels") or {}
        )
        where = f"mode pair {name} ({names[0]}, {names[1]})"
        gbps = _number(where, c.LINK_GBPS, labels.get(c.LINK_GBPS), None)
        if not gbps:
            raise InvalidInput(f"{where}: label its nodes {c.LINK_GBPS} (nominal Gb/s per path)")
        paths = _number(where, c.LINK_PATHS, labels.get(c.LINK_PATHS), 1.0)
        gid = _number(where, c.GID_INDEX, labels.get(c.GID_INDEX), None)
        links.append(
            {
                "name": name,
                "nodes": names,
                "paths": [
                    {"name": f"rail-{i}", "nominal_gbps": gbps} for i in range(int(paths or 1))
                ],
                "configured_gid_index": None if gid is None else int(gid),
            }
        )
    return links


def modes_from_labels(workloads: Iterable[Obj], links: list[Obj]) -> tuple[Mode, ...]:
    """The modes the workloads' labels name, on the nodes of their pair."""
    pairs = {str(lk["name"]): tuple(str(n) for n in lk["nodes"]) for lk in links}
    found: dict[str, dict[str, Any]] = {}
    for obj in workloads:
        meta = obj["metadata"]
        labels, notes = meta.get("labels") or {}, meta.get("annotations") or {}
        mode = labels.get(c.MODE)
        if not mode:
            continue
        where = f"workload {meta.get('namespace', '')}/{meta['name']}".replace(" /", " ")
        pair = labels.get(c.MODE_PAIR) or (next(iter(pairs)) if len(pairs) == 1 else None)
        if pair not in pairs:
            known = ", ".join(sorted(pairs)) or "none labelled"
            raise InvalidInput(
                f"{where}: {c.MODE}={mode} needs its pair: label it {c.MODE_PAIR} with one of "
                f"the nodes' pairs ({known})"
            )
        entry = found.setdefault(mode, {"pair": pair, "workloads": [], "peak": [], "one": []})
        if entry["pair"] != pair:
            raise InvalidInput(f"{where}: mode {mode} is on pair {entry['pair']}, not {pair}")
        entry["workloads"].append(meta["name"])
        entry["peak"].append(_number(where, c.PEAK_TOK_S, notes.get(c.PEAK_TOK_S), 0.0))
        entry["one"].append(_number(where, c.SINGLE_TOK_S, notes.get(c.SINGLE_TOK_S), 0.0))
        context = notes.get(c.CONTEXT)
        entry.setdefault("context", 0)
        if context and context.isdigit():
            entry["context"] = max(entry["context"], int(context))
    return tuple(
        Mode(
            name=mode,
            nodes=pairs[entry["pair"]],
            workloads=tuple(entry["workloads"]),
            aggregate_peak_tok_s=round(sum(entry["peak"]), 3),
            single_stream_tok_s=round(sum(entry["one"]) / len(entry["one"]), 3),
            max_context=entry["context"],
        )
        for mode, entry in sorted(found.items())
    )
