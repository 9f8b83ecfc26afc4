"""An observation's cards and serving engines in the Prometheus text format, under real names.

What a DCGM exporter and vLLM engines would serve for the same cluster, so that a real Prometheus
can scrape a simulated or recorded one (the Kubernetes twin, `steward gpus --serve`, the tests
and `steward bench metrics`). Cards are written as the DCGM exporter writes them
(`DCGM_FI_DEV_GPU_UTIL{gpu, UUID, device, modelName, Hostname, container, namespace, pod}`,
memory in MiB, power in W); engines as vLLM does (`vllm:num_requests_waiting{model_name}`), one
series per ready replica (pod), with the `pod`/`namespace` labels Prometheus would add from the
pod's target (here written by the exporter itself, one endpoint for many pods). The endpoint
picker's `inference_pool_average_queue_size{name}` can be added for workloads at zero replicas;
`queue_lines` writes Kueue's `kueue_local_queue_pending_workloads{name}` for render and batch jobs.

Only fresh readings are written: a real exporter has nothing to say about a value it did not
read. Counters and histograms (generated tokens, time to first token, queue time) accumulate
across `update` calls, so rate() and histogram_quantile() over them give back the observed
values. Memory taken from the host on unified-memory cards is labelled `memory_source`.
The classic text format (version 0.0.4) is written, never OpenMetrics (see PARTS note in
docs/metrics.md on `vllm:` names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from tools.model import ClusterState, Gpu, Metric, Workload

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MIB = 2**20
QUEUELESS = frozenset({"render", "batch"})
BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
"""vLLM's buckets of time to first token, in seconds."""
OBSERVATIONS_PER_UPDATE = 10
"""Requests added to a histogram at each update (any constant gives the same quantile)."""

_CARD_FAMILIES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs) + "}"


def _num(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


def _fresh(metric: Metric) -> float | None:
    return metric.value if metric.usable else None


PodNamer = Callable[[str, int], str]
"""(workload name, replica index) -> the name of the replica's pod where its engine runs."""


def indexed(name: str, index: int) -> str:
    """The default pod name: NAME-INDEX, as a StatefulSet names its pods."""
    return f"{name}-{index}"


def pod_of(client: str, namespace: str, pods: PodNamer = indexed) -> tuple[str, str] | None:
    """(namespace, pod) of a card client written `workload/replica-index`; None for `pid/…`."""
    workload, _, index = client.rpartition("/")
    if not workload or workload == "pid" or not index.isdigit():
        return None
    ns, _, name = workload.rpartition("/")
    return (ns or namespace), pods(name, int(index))


def card_lines(
    state: ClusterState, namespace: str = "default", pods: PodNamer = indexed
) -> list[str]:
    """The DCGM exporter's view of every card of `state`."""
    rows: dict[str, list[str]] = {name: [] for name, _ in _CARD_FAMILIES}
    for node in state.nodes:
        for gpu in node.gpus:
            _card(gpu, node.name, namespace, rows, pods)
    out: list[str] = []
    for name, help_text in _CARD_FAMILIES:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")
        out.extend(rows[name])
    return out


def _card(gpu: Gpu, host: str, namespace: str, rows: dict[str, list[str]], pods: PodNamer) -> None:
    model = gpu.model if gpu.model.startswith("NVIDIA") else f"NVIDIA {gpu.model}"
    pairs = [
        ("gpu", str(gpu.index)),
        ("UUID", gpu.uuid),
        ("device", f"nvidia{gpu.index}"),
        ("modelName", model),
        ("Hostname", host),
    ]
    for client in gpu.clients:
        pod = pod_of(client, namespace, pods)
        if pod is not None:
            container = client.rpartition("/")[0].rpartition("/")[2]  # the workload's name
            pairs += [("container", container), ("namespace", pod[0]), ("pod", pod[1])]
            break
    labels = _labels(pairs)
    util, power = _fresh(gpu.utilization), _fresh(gpu.power_w)
    if util is not None:
        rows["DCGM_FI_DEV_GPU_UTIL"].append(f"DCGM_FI_DEV_GPU_UTIL{labels} {_num(util)}")
    if power is not None:
        rows["DCGM_FI_DEV_POWER_USAGE"].append(
            f"DCGM_FI_DEV_POWER_USAGE{labels} {_num(round(power, 3))}"
        )
    used, total = _fresh(gpu.memory_used_bytes), _fresh(gpu.memory_total_bytes)
    if used is None or total is None:
        return
    if "unified memory" in gpu.memory_used_bytes.source:
        labels = labels[:-1] + ',memory_source="host-meminfo"}'
    rows["DCGM_FI_DEV_FB_USED"].append(f"DCGM_FI_DEV_FB_USED{labels} {int(used // MIB)}")
    free = max(0, int(total // MIB) - int(used // MIB))
    rows["DCGM_FI_DEV_FB_FREE"].append(f"DCGM_FI_DEV_FB_FREE{labels} {free}")


@dataclass
class _Histogram:
    counts: list[float] = field(default_factory=lambda: [0.0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def observe(self, value: float, times: int) -> None:
        for i, bound in enumerate(BUCKETS):
            if value <= bound:
                self.counts[i] += times
        self.counts[-1] += times
        self.total += value * times


@dataclass
class _Pod:
    tokens: float = 0.0
    ttft: _Histogram = field(default_factory=_Histogram)
    queue_time: _Histogram = field(default_factory=_Histogram)


class EngineExporter:
    """vLLM engines (and optionally the endpoint picker) of an observation, with counters that
    accumulate between updates."""

    def __init__(
        self,
        namespace: str = "default",
        prefix: str = "vllm:",
        epp: bool = False,
        pods: PodNamer = indexed,
    ):
        self.namespace = namespace
        self.prefix = prefix
        self.epp = epp
        self.pods = pods
        self._pods: dict[tuple[str, str], _Pod] = {}
        self._last_at: float | None = None
        self._lines: list[str] = []
        self._models: dict[tuple[str, str], str] = {}

    def update(self, state: ClusterState) -> None:
        now = state.observed_at.timestamp()
        dt = 0.0 if self._last_at is None else max(0.0, now - self._last_at)
        self._last_at = now
        gauges: dict[str, list[str]] = {n: [] for n in ("waiting", "running", "kv")}
        seen: set[tuple[str, str]] = set()
        pools: list[str] = []
        for w in state.workloads:
            if w.kind in QUEUELESS:
                continue
            if self.epp:
                pools.append(self._epp_line(w))
            pods = self._ready_pods(w)
            for i, (ns, pod) in enumerate(pods):
                seen.add((ns, pod))
                self._engine(w, (ns, pod), (i, len(pods)), dt=dt, gauges=gauges)
        for gone in set(self._pods) - seen:
            del self._pods[gone]
        p = self.prefix
        lines = [
            f"# TYPE {p}num_requests_waiting gauge",
            *gauges["waiting"],
            f"# TYPE {p}num_requests_running gauge",
            *gauges["running"],
            f"# TYPE {p}kv_cache_usage_perc gauge",
            *gauges["kv"],
            f"# TYPE {p}generation_tokens_total counter",
        ]
        hist = {"time_to_first_token_seconds": "ttft", "request_queue_time_seconds": "queue_time"}
        counters: list[str] = []
        for (ns, pod), state_ in self._pods.items():
            counters.append(
                f"{p}generation_tokens_total{self._pod_labels(ns, pod)} "
                f"{_num(round(state_.tokens, 3))}"
            )
        lines += counters
        for metric, attr in hist.items():
            lines.append(f"# TYPE {p}{metric} histogram")
            for (ns, pod), state_ in self._pods.items():
                lines += _histogram_lines(
                    f"{p}{metric}", self._pod_pairs(ns, pod), getattr(state_, attr)
                )
        if self.epp:
            lines += ["# TYPE inference_pool_average_queue_size gauge", *pools]
        self._lines = lines

    def lines(self) -> list[str]:
        return self._lines

    def _ready_pods(self, w: Workload) -> list[tuple[str, str]]:
        ns, _, name = w.name.rpartition("/")
        return [(ns or self.namespace, self.pods(name, r.index)) for r in w.placement if r.ready]

    def _pod_pairs(self, ns: str, pod: str) -> list[tuple[str, str]]:
        return [("model_name", self._models.get((ns, pod), "")), ("namespace", ns), ("pod", pod)]

    def _pod_labels(self, ns: str, pod: str) -> str:
        return _labels(self._pod_pairs(ns, pod))

    def _engine(
        self,
        w: Workload,
        slot: tuple[str, str],
        share: tuple[int, int],
        *,
        dt: float,
        gauges: dict[str, list[str]],
    ) -> None:
        """One ready replica's series; `share` is (its position, the replica count)."""
        ns, pod = slot
        i, n = share
        self._models[(ns, pod)] = w.model or w.name
        labels = self._pod_labels(ns, pod)
        p = self.prefix
        depth = _fresh(w.queue_depth)
        if depth is not None:
            part = int(depth) // n + (1 if i < int(depth) % n else 0)
            gauges["waiting"].append(f"{p}num_requests_waiting{labels} {part}")
        running = _fresh(w.requests_running)
        if running is not None:
            part = int(running) // n + (1 if i < int(running) % n else 0)
            gauges["running"].append(f"{p}num_requests_running{labels} {part}")
        kv = _fresh(w.kv_cache_usage)
        if kv is not None:
            gauges["kv"].append(f"{p}kv_cache_usage_perc{labels} {_num(kv)}")
        pod_state = self._pods.setdefault((ns, pod), _Pod())
        served = _fresh(w.tokens_per_s)
        if served is not None:
            pod_state.tokens += served * dt / n
        ttft = _fresh(w.ttft_s)
        if ttft is not None:
            pod_state.ttft.observe(ttft, OBSERVATIONS_PER_UPDATE)
        wait = _fresh(w.queue_wait_s)
        if wait is not None:
            pod_state.queue_time.observe(wait, OBSERVATIONS_PER_UPDATE)

    def _epp_line(self, w: Workload) -> str:
        ns, _, name = w.name.rpartition("/")
        depth = _fresh(w.queue_depth) or 0.0
        average = depth / max(w.ready_replicas, 1)
        return (
            f"inference_pool_average_queue_size"
            f"{_labels([('name', name), ('namespace', ns or self.namespace)])} {_num(average)}"
        )


def queue_lines(state: ClusterState, namespace: str = "default") -> list[str]:
    """Kueue's view of the render and batch workloads: the jobs each one's LocalQueue holds."""
    lines = ["# TYPE kueue_local_queue_pending_workloads gauge"]
    for w in state.workloads:
        depth = _fresh(w.queue_depth)
        if w.kind not in QUEUELESS or depth is None:
            continue
        ns, _, name = w.name.rpartition("/")
        pairs = [("name", name), ("namespace", ns or namespace), ("status", "active")]
        lines.append(f"kueue_local_queue_pending_workloads{_labels(pairs)} {_num(depth)}")
    return lines


def _histogram_lines(name: str, pairs: list[tuple[str, str]], h: _Histogram) -> list[str]:
    out = []
    for bound, count in zip((*BUCKETS, None), h.counts, strict=True):
        le = "+Inf" if bound is None else repr(bound)
        out.append(f"{name}_bucket{_labels([*pairs, ('le', le)])} {_num(count)}")
    labels = _labels(pairs)
    out.append(f"{name}_sum{labels} {_num(round(h.total, 6))}")
    out.append(f"{name}_count{labels} {_num(h.counts[-1])}")
    return out


def render(lines: Iterable[str], at: datetime | None = None) -> bytes:
    """One scrape's body; with `at`, every sample carries that time (the text format's optional
    timestamp, in milliseconds), as an exporter whose clock is not Prometheus's must say."""
    if at is not None:
        stamp = f" {round(at.timestamp() * 1000)}"
        lines = [line if line.startswith("#") else line + stamp for line in lines]
    return ("\n".join(lines) + "\n").encode()
