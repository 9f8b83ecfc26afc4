"""The twin's serving engines in the Prometheus text format: vLLM's names, or SGLang's.

One engine per ready replica (pod), with the `pod`/`namespace` labels Prometheus would add from
the pod's target (here written by the exporter itself, one endpoint for many pods) and the
engine's own `model_name`. A workload labelled `steward.dev/engine: sglang` is served by SGLang
and written under SGLang's names (`sglang:num_queue_reqs`, `sglang:num_running_reqs`,
`sglang:token_usage`, `sglang:generation_tokens_total`, `sglang:prompt_tokens_total`,
`sglang:num_requests_total`, `sglang:time_to_first_token_seconds`, `sglang:queue_time_seconds`,
`sglang:inter_token_latency_seconds`, `sglang:e2e_request_latency_seconds`, with SGLang's own
histogram buckets); any other under
vLLM's (`vllm:num_requests_waiting`, `vllm:num_requests_running`, `vllm:kv_cache_usage_perc`,
`vllm:generation_tokens_total`, `vllm:prompt_tokens_total`, `vllm:request_success_total`,
`vllm:time_to_first_token_seconds`, `vllm:request_queue_time_seconds`,
`vllm:inter_token_latency_seconds`, `vllm:e2e_request_latency_seconds`). The endpoint
picker's `inference_pool_average_queue_size{name}` can be added for workloads at zero replicas.

Only fresh readings are written: a real engine has nothing to say about a value it did not read.
Counters (generated and prompt tokens, requests finished) and histograms (time to first token,
queue time, inter-token latency) accumulate across `update` calls, so rate() and
histogram_quantile() over them give back the observed values. The histograms take one
observation per request, as vLLM's do, when `update` is given the requests' latencies since the
last one (lab.twin.latencies: the twin's exporters always are); a workload's requests are shared
evenly among its ready pods, so the counts over its pods add up to the requests it served. Given
only an observation (a `ClusterState` with no simulator behind it), a workload's scraped p90 is
observed OBSERVATIONS_PER_UPDATE times instead: the quantile comes back, not the distribution.
A counter grows per second of Prometheus's clock, which for a twin faster than the wall clock is
not the simulated one: `speed` says how many simulated seconds one of its seconds holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lab.twin.latencies import Observed
from tools.metrics.exposition import (
    QUEUELESS,
    PodNamer,
    fresh_value,
    indexed,
    label_text,
    number,
)
from tools.model import ClusterState, Workload

ENGINE_LABEL = "steward.dev/engine"
"""The workload label naming its serving engine: `sglang`, else vLLM."""

VLLM_BUCKETS = (
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
"""vLLM's buckets of time to first token and of queue time, in seconds."""
SGLANG_TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
"""SGLang's default buckets of `sglang:time_to_first_token_seconds` (its metrics collector)."""
SGLANG_QUEUE_BUCKETS = (
    0.0,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.2,
    0.5,
    1,
    2,
    3,
    4,
    5,
    10,
    15,
    20,
    30,
    40,
    50,
    60,
    70,
    80,
    90,
    100,
    200,
    300,
    400,
    500,
    600,
    700,
    800,
    900,
    1000,
)
"""SGLang's buckets of `sglang:queue_time_seconds`."""
VLLM_ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
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
)
"""vLLM's buckets of `vllm:inter_token_latency_seconds` (SGLang's are taken alike here)."""
VLLM_E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                    60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip
"""vLLM's buckets of `vllm:e2e_request_latency_seconds` (SGLang's are taken alike here)."""
OBSERVATIONS_PER_UPDATE = 10
"""Requests added to a histogram at each update (any constant gives the same quantile)."""


@dataclass(frozen=True, kw_only=True)
class Dialect:
    """One engine's names for what Steward reads of it, and its histograms' buckets."""

    ttft_buckets: tuple[float, ...] = VLLM_BUCKETS
    queue_buckets: tuple[float, ...] = VLLM_BUCKETS
    itl_buckets: tuple[float, ...] = VLLM_ITL_BUCKETS
    e2e_buckets: tuple[float, ...] = VLLM_E2E_BUCKETS
    waiting: str
    """Gauge: requests waiting for a batch slot (Steward's queue depth)."""
    running: str
    """Gauge: requests in the running batch."""
    kv: str
    """Gauge: the KV cache's use, 0..1."""
    tokens: str
    """Counter: tokens generated."""
    prompt_tokens: str
    """Counter: prompt tokens prefilled."""
    requests: str
    """Counter: requests finished."""
    itl: str
    """Histogram: inter-token latency, in seconds."""
    ttft: str
    """Histogram: time to first token, in seconds."""
    queue_time: str
    """Histogram: time a request waited before its prefill, in seconds."""
    e2e: str
    """Histogram: a finished request's time from arrival to its last token, in seconds."""


def vllm(prefix: str = "vllm:") -> Dialect:
    """vLLM's names; `prefix` "vllm_" as a Prometheus that negotiated OpenMetrics stores them."""
    return Dialect(
        waiting=f"{prefix}num_requests_waiting",
        running=f"{prefix}num_requests_running",
        kv=f"{prefix}kv_cache_usage_perc",
        tokens=f"{prefix}generation_tokens_total",
        prompt_tokens=f"{prefix}prompt_tokens_total",
        requests=f"{prefix}request_success_total",
        itl=f"{prefix}inter_token_latency_seconds",
        ttft=f"{prefix}time_to_first_token_seconds",
        queue_time=f"{prefix}request_queue_time_seconds",
        e2e=f"{prefix}e2e_request_latency_seconds",
    )


SGLANG = Dialect(
    waiting="sglang:num_queue_reqs",
    running="sglang:num_running_reqs",
    kv="sglang:token_usage",
    tokens="sglang:generation_tokens_total",
    prompt_tokens="sglang:prompt_tokens_total",
    requests="sglang:num_requests_total",
    itl="sglang:inter_token_latency_seconds",
    ttft="sglang:time_to_first_token_seconds",
    queue_time="sglang:queue_time_seconds",
    e2e="sglang:e2e_request_latency_seconds",
    ttft_buckets=SGLANG_TTFT_BUCKETS,
    queue_buckets=SGLANG_QUEUE_BUCKETS,
)


@dataclass
class _Histogram:
    bounds: tuple[float, ...]
    counts: list[float] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0.0] * (len(self.bounds) + 1)

    def observe(self, value: float, times: float) -> None:
        for i, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[i] += times
        self.counts[-1] += times
        self.total += value * times

    def lines(self, name: str, pairs: list[tuple[str, str]]) -> list[str]:
        out = []
        for bound, count in zip((*self.bounds, None), self.counts, strict=True):
            le = "+Inf" if bound is None else repr(float(bound))
            out.append(f"{name}_bucket{label_text([*pairs, ('le', le)])} {number(count)}")
        labels = label_text(pairs)
        out.append(f"{name}_sum{labels} {number(round(self.total, 6))}")
        out.append(f"{name}_count{labels} {number(self.counts[-1])}")
        return out


@dataclass
class _Pod:
    dialect: Dialect
    model: str
    tokens: float = 0.0
    prompt_tokens: float = 0.0
    requests: float = 0.0
    ttft: _Histogram = field(init=False)
    queue_time: _Histogram = field(init=False)
    itl: _Histogram = field(init=False)
    e2e: _Histogram = field(init=False)

    def __post_init__(self) -> None:
        self.ttft = _Histogram(self.dialect.ttft_buckets)
        self.queue_time = _Histogram(self.dialect.queue_buckets)
        self.itl = _Histogram(self.dialect.itl_buckets)
        self.e2e = _Histogram(self.dialect.e2e_buckets)


class EngineExporter:
    """The engines (and optionally the endpoint picker) of an observation, with counters that
    accumulate between updates."""

    def __init__(
        self,
        namespace: str = "default",
        prefix: str = "vllm:",
        epp: bool = False,
        pods: PodNamer = indexed,
        speed: float = 1.0,
    ):
        """`speed`: simulated seconds per second of the clock Prometheus stamps the samples
        with. A twin paced faster than the wall clock (`steward twin --speed 10`) writes no
        sample times, so Prometheus dates each scrape by the wall clock; its counters then grow
        by one wall second's share of each simulated second, so that rate() over them is still
        per simulated second."""
        if speed <= 0:
            raise ValueError(f"speed must be > 0, got {speed}")
        self.speed = speed
        self.namespace = namespace
        self.vllm = vllm(prefix)
        self.epp = epp
        self.pods = pods
        self._pods: dict[tuple[str, str], _Pod] = {}
        self._last_at: float | None = None
        self._lines: list[str] = []

    def dialect(self, w: Workload) -> Dialect:
        """The engine serving `w`: SGLang when its label says so, else vLLM."""
        return SGLANG if w.labels.get(ENGINE_LABEL) == "sglang" else self.vllm

    def update(self, state: ClusterState, requests: Mapping[str, Observed] | None = None) -> None:
        """Advance to `state`; `requests`: per workload, its requests' latencies since the last
        update (each one observed into its pods' histograms; without: the scraped p90s)."""
        now = state.observed_at.timestamp()
        dt = 0.0 if self._last_at is None else max(0.0, now - self._last_at)
        self._last_at = now
        gauges: dict[str, list[str]] = {}
        """Series by metric name: the text format wants each family's lines together."""
        seen: set[tuple[str, str]] = set()
        pools: list[str] = []
        for w in state.workloads:
            if w.kind in QUEUELESS:
                continue
            if self.epp:
                pools.append(self._epp_line(w))
            pods = self._ready_pods(w)
            observed = None if requests is None else requests.get(w.name)
            for i, slot in enumerate(pods):
                seen.add(slot)
                self._engine(w, slot, (i, len(pods)), dt=dt, gauges=gauges, observed=observed)
        for gone in set(self._pods) - seen:
            del self._pods[gone]
        lines: list[str] = []
        for name, rows in gauges.items():
            lines += [f"# TYPE {name} gauge", *rows]
        counters: dict[str, list[str]] = {}
        histograms: dict[str, list[str]] = {}
        for (ns, pod), engine in self._pods.items():
            d, pairs = engine.dialect, self._pairs(ns, pod, engine)
            for name, total in (
                (d.tokens, engine.tokens),
                (d.prompt_tokens, engine.prompt_tokens),
                (d.requests, engine.requests),
            ):
                labels = [*pairs, ("finished_reason", "stop")] if name == d.requests else pairs
                counters.setdefault(name, []).append(
                    f"{name}{label_text(labels)} {number(round(total, 3))}"
                )
            histograms.setdefault(d.ttft, []).extend(engine.ttft.lines(d.ttft, pairs))
            histograms.setdefault(d.queue_time, []).extend(
                engine.queue_time.lines(d.queue_time, pairs)
            )
            histograms.setdefault(d.itl, []).extend(engine.itl.lines(d.itl, pairs))
            histograms.setdefault(d.e2e, []).extend(engine.e2e.lines(d.e2e, pairs))
        for name, rows in counters.items():
            lines += [f"# TYPE {name} counter", *rows]
        for name, rows in histograms.items():
            lines += [f"# TYPE {name} histogram", *rows]
        if self.epp:
            lines += ["# TYPE inference_pool_average_queue_size gauge", *pools]
        self._lines = lines

    def lines(self) -> list[str]:
        return self._lines

    def _ready_pods(self, w: Workload) -> list[tuple[str, str]]:
        ns, _, name = w.name.rpartition("/")
        return [(ns or self.namespace, self.pods(name, r.index)) for r in w.placement if r.ready]

    @staticmethod
    def _pairs(ns: str, pod: str, engine: _Pod) -> list[tuple[str, str]]:
        return [("model_name", engine.model), ("namespace", ns), ("pod", pod)]

    def _engine(
        self,
        w: Workload,
        slot: tuple[str, str],
        share: tuple[int, int],
        *,
        dt: float,
        gauges: dict[str, list[str]],
        observed: Observed | None = None,
    ) -> None:
        """One ready replica's series; `share` is (its position, the replica count)."""
        i, n = share
        d = self.dialect(w)
        engine = self._pods.get(slot)
        if engine is None or engine.dialect != d:
            engine = self._pods[slot] = _Pod(d, w.model or w.name)
        engine.model = w.model or w.name
        labels = label_text(self._pairs(*slot, engine))
        for name, reading in ((d.waiting, w.queue_depth), (d.running, w.requests_running)):
            count = fresh_value(reading)
            if count is not None:  # the replicas' shares add up to the workload's count
                part = int(count) // n + (1 if i < int(count) % n else 0)
                gauges.setdefault(name, []).append(f"{name}{labels} {part}")
        kv = fresh_value(w.kv_cache_usage)
        if kv is not None:
            gauges.setdefault(d.kv, []).append(f"{d.kv}{labels} {number(kv)}")
        served = fresh_value(w.tokens_per_s)
        if served is not None:
            engine.tokens += served * dt / n / self.speed
        prompts = fresh_value(w.prompt_tokens_per_s)
        if prompts is not None:
            engine.prompt_tokens += prompts * dt / n / self.speed
        finished = fresh_value(w.requests_per_s)
        if finished is not None:
            engine.requests += finished * dt / n / self.speed
        if observed is not None:  # every request, its pods taking equal shares
            for histogram, values in (
                (engine.ttft, observed.ttft),
                (engine.itl, observed.itl),
                (engine.queue_time, observed.queue_time),
                (engine.e2e, observed.e2e),
            ):
                for value, count in values:
                    histogram.observe(value, count / n)
            return
        ttft = fresh_value(w.ttft_s)
        if ttft is not None:
            engine.ttft.observe(ttft, OBSERVATIONS_PER_UPDATE)
        itl = fresh_value(w.itl_s)
        if itl is not None:
            engine.itl.observe(itl, OBSERVATIONS_PER_UPDATE)
        wait = fresh_value(w.queue_wait_s)
        if wait is not None:
            engine.queue_time.observe(wait, OBSERVATIONS_PER_UPDATE)

    def _epp_line(self, w: Workload) -> str:
        ns, _, name = w.name.rpartition("/")
        depth = fresh_value(w.queue_depth) or 0.0
        average = depth / max(w.ready_replicas, 1)
        return (
            f"inference_pool_average_queue_size"
            f"{label_text([('name', name), ('namespace', ns or self.namespace)])} {number(average)}"
        )
