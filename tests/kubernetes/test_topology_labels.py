"""The mode pairs, their links and the modes are found from labels (the convention of
tools/backends/kubernetes/topology.py), with no hand-written JSON: on the twin, whose ConfigMap
then names only the pools, the backend reads the simulator's modes and links from the labels its
nodes and workloads carry; a label that cannot make a pair is refused naming the nodes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.twin.mirror import TOPOLOGY
from lab.twin.resources import CONFIGMAP
from lab.twin.server import Twin
from tests.kubernetes.conftest import open_backend
from tools.backends.kubernetes.topology import links_from_labels, modes_from_labels
from tools.errors import InvalidInput
from tools.model import ClusterState


def _figures(state: ClusterState) -> dict[str, Any]:
    return {
        "modes": sorted(
            (
                m.name,
                m.nodes,
                m.workloads,
                m.aggregate_peak_tok_s,
                m.single_stream_tok_s,
                m.max_context,
            )
            for m in state.modes
        ),
        "active_mode": state.active_mode.name if state.active_mode else None,
        "links": [
            (
                lk.name,
                lk.nodes,
                [(p.name, p.nominal_gbps) for p in lk.paths],
                lk.configured_gid_index,
            )
            for lk in state.links
        ],
    }


def test_without_modes_and_links_in_the_configmap_the_labels_give_them(twin: Twin) -> None:
    def pools_only() -> None:
        cm = twin.store.get(CONFIGMAP, "default", TOPOLOGY)
        data = {"pools": cm["data"]["pools"]}
        twin.store.upsert(CONFIGMAP, "default", TOPOLOGY, {**cm, "data": data})

    twin.call(pools_only)
    backend = open_backend(twin)
    try:
        observed = backend.observe()
    finally:
        backend.close()
    simulated = twin.call(twin.sim.observe)
    assert observed.modes and observed.links
    assert _figures(observed) == _figures(simulated)


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def test_a_pair_is_two_nodes_with_a_nominal_speed() -> None:
    pair = {"steward.dev/mode-pair": "gx10-link", "steward.dev/link-gbps": "200"}
    (link,) = links_from_labels(
        [_node("b", **pair, **{"steward.dev/link-paths": "2"}), _node("a", **pair)]
    )
    assert link["nodes"] == ["a", "b"] and len(link["paths"]) == 2
    with pytest.raises(InvalidInput, match=r"on 3 node\(s\) \(a, b, c\); a mode pair is two"):
        links_from_labels([_node(n, **pair) for n in "abc"])
    with pytest.raises(InvalidInput, match=r"label its nodes steward\.dev/link-gbps"):
        links_from_labels([_node(n, **{"steward.dev/mode-pair": "x"}) for n in "ab"])


def test_with_two_pairs_a_mode_names_its_pair() -> None:
    links = [{"name": name, "nodes": [f"{name}-a", f"{name}-b"]} for name in ("left", "right")]
    workload = {"metadata": {"name": "big", "labels": {"steward.dev/mode": "cluster"}}}
    with pytest.raises(InvalidInput, match=r"workload big: .*\(left, right\)"):
        modes_from_labels([workload], links)
    workload["metadata"]["labels"]["steward.dev/mode-pair"] = "right"
    workload["metadata"]["annotations"] = {"steward.dev/peak-tok-s": "95.5"}
    (mode,) = modes_from_labels([workload], links)
    assert mode.nodes == ("right-a", "right-b") and mode.aggregate_peak_tok_s == 95.5
    assert json.loads(mode.model_dump_json())["workloads"] == ["big"]
