"""The twin's telemetry, standing in for Prometheus and the exporters on a real cluster.

The Kubernetes API carries no measurements. On a real cluster the metric sources (Prometheus
over dcgm-exporter and vLLM, NVML) fill them in; on the twin, `GET /twin/readings` answers the
simulator's readings as it measured them (value, freshness, when, which exporter) and
`TwinReadings` is the MetricSource that merges them into the backend's observation, so a loop
on the Kubernetes backend sees what a loop on the embedded simulator sees.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from pydantic import BaseModel

from tools.model import ClusterState, Gpu, Metric, Workload


def _measured(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of a model that are measurements: every one of them is carried, so a reading
    the simulator adds reaches the Kubernetes backend's loop too."""
    return tuple(name for name, f in model.model_fields.items() if f.annotation is Metric)


GPU_FIELDS = _measured(Gpu)
WORKLOAD_FIELDS = _measured(Workload)


def readings(state: ClusterState) -> dict[str, Any]:
    """The measured values of an observation, keyed by what they measure, and its time."""
    return {
        "now": state.observed_at.isoformat(),
        "nodes": {
            n.name: {
                "memory_used_bytes": n.memory_used_bytes.as_json(),
                "gpus": {g.uuid: {f: getattr(g, f).as_json() for f in GPU_FIELDS} for g in n.gpus},
            }
            for n in state.nodes
        },
        "workloads": {
            w.name: {f: getattr(w, f).as_json() for f in WORKLOAD_FIELDS} for w in state.workloads
        },
        "links": {
            lk.name: {
                p.name: {
                    "negotiated_gbps": p.negotiated_gbps.as_json(),
                    "gid_index": p.gid_index.as_json(),
                }
                for p in lk.paths
            }
            for lk in state.links
        },
    }


def source_at(url: str) -> TwinReadings:
    """`metrics.sources: [twin]` of `steward run` against `steward twin` at `url` (the entry
    point `steward.metric_sources: twin`): its readings dated by the wall clock."""
    return TwinReadings(url, wall_clock=True)


class TwinReadings:
    """A MetricSource over the twin's `/twin/readings` (see the module docstring)."""

    name = "twin"

    def __init__(self, url: str, timeout_s: float = 5.0, *, wall_clock: bool = False) -> None:
        self.url = url.rstrip("/") + "/twin/readings"
        self.timeout_s = timeout_s
        self.wall_clock = wall_clock
        """The loop runs on the wall clock (`steward run` against `steward twin`), not the
        twin's: each reading is dated as old, by the wall clock, as it is in simulated time."""

    def read(self, state: ClusterState) -> ClusterState:
        try:
            got: dict[str, Any] = httpx.get(self.url, timeout=self.timeout_s).json()
        except (httpx.HTTPError, ValueError):
            return state  # a source that is down leaves the readings missing: never invented
        shift = timedelta(0)
        if self.wall_clock:
            shift = datetime.now(UTC) - datetime.fromisoformat(got["now"])
        m = functools.partial(_metric, shift)
        nodes = []
        for n in state.nodes:
            r = got["nodes"].get(n.name)
            if r is None:
                nodes.append(n)
                continue
            gpus = tuple(
                g.model_copy(update={f: m(v) for f, v in r["gpus"].get(g.uuid, {}).items()})
                for g in n.gpus
            )
            used = m(r["memory_used_bytes"])
            nodes.append(n.model_copy(update={"gpus": gpus, "memory_used_bytes": used}))
        workloads = tuple(
            w.model_copy(update={f: m(v) for f, v in got["workloads"].get(w.name, {}).items()})
            for w in state.workloads
        )
        links = []
        for lk in state.links:
            paths = got["links"].get(lk.name, {})
            links.append(
                lk.model_copy(
                    update={
                        "paths": tuple(
                            p.model_copy(update={k: m(v) for k, v in paths.get(p.name, {}).items()})
                            for p in lk.paths
                        )
                    }
                )
            )
        return state.model_copy(
            update={"nodes": tuple(nodes), "workloads": workloads, "links": tuple(links)}
        )


def _metric(shift: timedelta, raw: Any) -> Metric:
    metric = Metric.parse(raw)
    if not shift or metric.observed_at is None:
        return metric
    return metric.but(observed_at=metric.observed_at + shift)
