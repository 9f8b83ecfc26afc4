"""The metric families Steward asks Prometheus for, under the names the real exporters use.

One family is one instant query per tick, whatever the size of the cluster: its series are then
joined to cards or workloads by their labels (tools.metrics.prometheus.join). Each family has a
value query and a timestamp query that dates its series by their samples' own times
(`timestamp()` of the raw selector, the oldest per card or pod); both are sent as
one request (`combined`). The default queries come back as value series that each carry their
own sample time in a `steward_t` label (Prometheus joins it on, `group_left`), after keeping only
the labels the join reads; an override's come back as value and timestamp series told apart by a
`steward_part` label, a timestamp series dating every value series that carries its labels
(join.collect).

Names come from the exporters themselves: the DCGM exporter (`DCGM_FI_DEV_*`, labels gpu, UUID,
device, modelName, Hostname and the workload's pod/namespace/container), vLLM (`vllm:*`, which a
Prometheus that negotiated OpenMetrics with prometheus-client may store as `vllm_*`: both are
matched), SGLang (`sglang:*`) and the Gateway API inference extension's endpoint picker that
llm-d runs (`inference_pool_*`, labelled with the InferencePool's `name`), and Kueue's job queues
(`kueue_local_queue_pending_workloads`, labelled with the LocalQueue's `name`: a render or batch
workload's jobs waiting, which no serving engine reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

Target = Literal["gpu", "workload", "inference_pool", "job_queue"]
Aggregate = Literal["sum", "max"]
PART = "steward_part"
"""The label that tells a family's value series from its timestamp series in one answer."""
STAMP = "steward_t"
"""The label that carries a value series' sample time (POSIX seconds, as Prometheus writes a
float) in the answer to a family's default queries."""
CARDS = "steward_cards"
"""The label of a node's series in a card family's answer: how many of its cards' series the
node's one value stands for (they all read it; tools.metrics.prometheus.alike)."""
UNIFIED_LABEL = "memory_source"
"""Set by `steward gpus --serve` on memory series taken from the host (GB10 unified memory)."""

_BY = "pod, namespace, model_name"
"""The labels a workload's series are joined by, kept through aggregations (`_pods` first moves
a pod Prometheus renamed into them)."""
_KEEP = {
    "gpu": "UUID, gpu, Hostname, node, kubernetes_node, memory_source",
    "workload": f"{_BY}, memory_source",
    "inference_pool": "name, namespace, memory_source",
    "job_queue": "name, namespace, memory_source",
}
"""Per target, every label the join reads of a value series (tools.metrics.prometheus.indexes):
a gauge's default query keeps only these (and its scrape target's), by the family's aggregate."""


class Family(BaseModel):
    """One metric family: what it fills, how its series combine, and its default queries."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    target: Target
    field: str
    """The `Gpu` or `Workload` field it fills (memory_free_bytes: with used, the card's total;
    epp_queue: the queue of a workload no engine series covers; jobs_waiting: the jobs waiting
    for a batch workload, from its job queue)."""
    query: str
    timestamp: str
    aggregate: Aggregate = "sum"
    """How several series of one card or workload combine (replicas of one workload)."""
    scale: float = 1.0
    """Multiplies the value into the model's unit (MiB -> bytes)."""
    dated_by: str = ""
    """The labels the default timestamp query groups by (with `keep`): a value series is dated
    by the timestamp of the group with its values of them — its own oldest sample."""
    ticked: bool = True
    """Read every tick; False: only when the settings ask for it (`power`: no decision reads a
    card's power, and `steward gpus` reads it from NVML itself)."""
    keep: str = ""
    """The labels the default value query keeps: its series aggregated by them and `dated_by`,
    by the family's aggregate, so that they are unique without their names (what joining their
    times on needs). "" when the query's own series already are (a `sum by` the join's labels)."""

    @property
    def marked(self) -> bool:
        """Whether its series may be marked as taken from host memory (`memory_source`, which
        `steward gpus --serve` sets on a GB10's memory series): the cards' memory families."""
        return self.field in ("memory_used_bytes", "memory_free_bytes")

    @property
    def group(self) -> str:
        """What one default value series is, and is dated by: `keep` and `dated_by`."""
        return f"{self.keep}, {self.dated_by}" if self.keep else self.dated_by


def _pods(expr: str) -> str:
    """`expr` with the pod that exported a series in `pod` and `namespace`: where Prometheus
    renamed the exporter's own labels (`exported_pod`, `exported_namespace`: a gateway that
    reports per pod, scraped through its own pod), those are the pod's, as the join reads an
    override's series. Outside `timestamp()`, which answers the sample's time only for a series
    taken straight from a selector (of anything else, the evaluation's)."""
    renamed = f'label_replace({expr}, "pod", "$1", "exported_pod", "(.+)")'
    return f'label_replace({renamed}, "namespace", "$1", "exported_namespace", "(.+)")'


def _selector(names: str, *matchers: str) -> str:
    return "{" + ", ".join((f'__name__=~"{names}"', *matchers)) + "}"


def _engine(name: str, target: Target, field: str, names: str, **kw: object) -> Family:
    """A gauge of the serving engines, one series per pod."""
    selector = _selector(names)
    return _gauge(
        name,
        target,
        field,
        _pods(selector),
        timestamp=f"min by ({_KEEP[target]}, {_TARGET}) ({_pods(f'timestamp({selector})')})",
        **kw,
    )


def _per_pod(name: str, field: str, query: str, stamped: str, **kw: object) -> Family:
    """A rate or a quantile of the engines, one series per pod, dated by `stamped`'s samples
    (the oldest per pod)."""
    return Family.model_validate(
        {
            "name": name,
            "target": "workload",
            "field": field,
            "query": query,
            "timestamp": f"min by ({_BY}) ({_pods(f'timestamp({stamped})')})",
            "dated_by": _BY,
            **kw,
        }
    )


def _rate(names: str) -> str:
    return _pods(f"rate({_selector(names)}[{{window}}])")


def _quantile(names: str) -> str:
    return f"histogram_quantile(0.9, sum by (le, {_BY}) ({_rate(names)}))"


_TTFT = "(vllm[:_]|sglang[:_])time_to_first_token_seconds_bucket"
_QUEUE_TIME = "vllm[:_]request_queue_time_seconds_bucket|sglang[:_]queue_time_seconds_bucket"
_TOKENS = "(vllm[:_]|sglang[:_])generation_tokens_total"
_PROMPT_TOKENS = "(vllm[:_]|sglang[:_])prompt_tokens_total"
_FINISHED = "vllm[:_]request_success_total|sglang[:_]num_requests_total"
_ITL = (
    "(vllm[:_]|sglang[:_])inter_token_latency_seconds_bucket"
    "|vllm[:_]time_per_output_token_seconds_bucket"
)
_WAITING = "vllm[:_]num_requests_waiting|sglang[:_]num_queue_reqs"
_RUNNING = "vllm[:_]num_requests_running|sglang[:_]num_running_reqs"
_KV = "vllm[:_](gpu|kv)_cache_usage_perc|sglang[:_]token_usage"
MIB = float(2**20)


_TARGET = "instance, job"
"""A scrape target. A gauge's series are dated per card or pod and target, not per target alone
(though every series of one scrape shares its sample time): a series that Prometheus still
answers from an earlier scrape — a pod gone while Prometheus was down gets no staleness marker,
and is answered for the whole lookback — makes only its own card's reading old, not every card
of the exporter's."""


def _gauge(name: str, target: Target, field: str, query: str, **kw: object) -> Family:
    return Family.model_validate(
        {
            "name": name,
            "target": target,
            "field": field,
            "query": query,
            "timestamp": f"min by ({_KEEP[target]}, {_TARGET}) (timestamp({query}))",
            "dated_by": _TARGET,
            "keep": _KEEP[target],
            **kw,
        }
    )


FAMILY_LIST: tuple[Family, ...] = (
    _gauge("gpu_util", "gpu", "utilization", "DCGM_FI_DEV_GPU_UTIL", aggregate="max"),
    _gauge(
        "fb_used", "gpu", "memory_used_bytes", "DCGM_FI_DEV_FB_USED", aggregate="max", scale=MIB
    ),
    _gauge(
        "fb_free", "gpu", "memory_free_bytes", "DCGM_FI_DEV_FB_FREE", aggregate="max", scale=MIB
    ),
    _gauge("power", "gpu", "power_w", "DCGM_FI_DEV_POWER_USAGE", aggregate="max", ticked=False),
    _engine("waiting", "workload", "queue_depth", _WAITING),
    _engine("running", "workload", "requests_running", _RUNNING),
    _engine("kv_cache", "workload", "kv_cache_usage", _KV, aggregate="max"),
    _per_pod(
        "ttft_p90",
        "ttft_s",
        _quantile(_TTFT),
        _selector(_TTFT, 'le="+Inf"'),
        aggregate="max",
    ),
    _per_pod(
        "queue_time_p90",
        "queue_wait_s",
        _quantile(_QUEUE_TIME),
        _selector(_QUEUE_TIME, 'le="+Inf"'),
        aggregate="max",
    ),
    _per_pod(
        "itl_p90",
        "itl_s",
        _quantile(_ITL),
        _selector(_ITL, 'le="+Inf"'),
        aggregate="max",
    ),
    _per_pod(
        "generation_tokens",
        "tokens_per_s",
        f"sum by ({_BY}) ({_rate(_TOKENS)})",
        _selector(_TOKENS),
    ),
    _per_pod(
        "prompt_tokens",
        "prompt_tokens_per_s",
        f"sum by ({_BY}) ({_rate(_PROMPT_TOKENS)})",
        _selector(_PROMPT_TOKENS),
    ),
    _per_pod(
        "requests_finished",
        "requests_per_s",
        f"sum by ({_BY}) ({_rate(_FINISHED)})",
        _selector(_FINISHED),
    ),
    _gauge("epp_queue", "inference_pool", "epp_queue", "inference_pool_average_queue_size"),
    _gauge("jobs_waiting", "job_queue", "jobs_waiting", "kueue_local_queue_pending_workloads"),
)
FAMILIES: dict[str, Family] = {f.name: f for f in FAMILY_LIST}

CARD_TIME = "steward:node_gpu_sample_time_seconds:min"
WORKLOAD_TIME = "steward:workload_sample_time_seconds:min"
DATED_BY: dict[str, str] = {
    CARD_TIME: "Hostname, node, kubernetes_node",
    WORKLOAD_TIME: "namespace, workload",
}
"""The labels each time series is recorded by: what a recorded value series shares with the
time series that dates it."""
RECORDED: dict[str, tuple[str, str]] = {
    "gpu_util": ("steward:gpu_utilization:max", CARD_TIME),
    "fb_used": ("steward:gpu_memory_used_mebibytes:max", CARD_TIME),
    "fb_free": ("steward:gpu_memory_free_mebibytes:max", CARD_TIME),
    "waiting": ("steward:workload_requests_waiting:sum", WORKLOAD_TIME),
    "running": ("steward:workload_requests_running:sum", WORKLOAD_TIME),
    "kv_cache": ("steward:workload_kv_cache_usage:max", WORKLOAD_TIME),
    "ttft_p90": ("steward:workload_time_to_first_token_seconds:p90", WORKLOAD_TIME),
    "queue_time_p90": ("steward:workload_queue_time_seconds:p90", WORKLOAD_TIME),
    "itl_p90": ("steward:workload_inter_token_latency_seconds:p90", WORKLOAD_TIME),
    "generation_tokens": ("steward:workload_generation_tokens:rate5m", WORKLOAD_TIME),
    "prompt_tokens": ("steward:workload_prompt_tokens:rate5m", WORKLOAD_TIME),
    "requests_finished": ("steward:workload_requests_finished:rate5m", WORKLOAD_TIME),
}
"""Per family: the series Steward's recording rules (rules.yaml beside this module) record for
it, and the series that dates them (each node's cards, each workload, by their oldest sample).
A card's series keep the labels the join reads; a workload's carry `workload`, the pod name
without its controller's suffixes, and are aggregated by the family's aggregate."""
RULES_FILE = Path(__file__).with_name("rules.yaml")


class Resolved(BaseModel):
    """A family with the queries the settings chose for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: Family
    query: str
    timestamp: str
    default: bool = False
    """Both queries are the family's own: its answer comes as value series dated in labels."""
    recorded: str = ""
    """The query over the series Steward's recording rules record for this family: its value
    series, each with its node's or workload's sample time in `steward_t` (`dated_recorded`;
    a card family's: `alike_recorded`, one series for a node whose cards read alike); "" where
    none is asked (an override, a family without rules, or `rules: raw`)."""
    recorded_series: tuple[str, str] | None = None
    """A card family's recorded value series and the series that dates them: what asks for
    some nodes' cards one by one (`cards_recorded`)."""

    @property
    def name(self) -> str:
        return self.family.name

    @property
    def combined(self) -> str:
        """Value and timestamp series in one request.

        The default queries: each value series with its own sample time in the `steward_t`
        label, joined on by Prometheus from the timestamp series of its group — no timestamp
        series of their own in the answer, and no label the join does not read. Overrides:
        value and timestamp series, each marked by the `steward_part` label."""
        family = self.family
        if self.default and family.dated_by:
            by, value = family.group, self.query
            if family.keep:  # one series per card or pod and target: the names are dropped
                value = f"{family.aggregate} by ({by}) ({value})"
            stamp = f'count_values by ({by}) ("{STAMP}", {self.timestamp})'
            return f"{value} + on ({by}) group_left ({STAMP}) (0 * {stamp})"
        value = f'label_replace({self.query}, "{PART}", "v", "", "")'
        if not self.timestamp:
            return value
        # Timestamps first: Prometheus answers an `or` left side first, so the join can date
        # each value series as it reads it (it copes with any order, only more slowly).
        return f'label_replace({self.timestamp}, "{PART}", "t", "", "") or {value}'

    @property
    def reads(self) -> tuple[str, ...]:
        """The labels the join reads down every series of the default queries' answer
        (tools.metrics.prometheus.join): read as the answer is decoded. () for an override's,
        whose shape is found out as it is read."""
        if not self.default:
            return ()
        target = self.family.target
        if target == "gpu":
            return ("UUID", STAMP)
        if target == "workload":
            return ("pod", "namespace", STAMP)
        return ()


def dated_recorded(value: str, time: str) -> str:
    """The recorded series `value`, each with the sample time its node or workload recorded in
    `time` joined on as the `steward_t` label (as the default queries date theirs): one series a
    card or workload, no time series of their own in the answer, and no metric name (the
    addition drops it). A value series without a time (one recorded before its node's) is left
    out, as it cannot be dated."""
    by = DATED_BY[time]
    stamp = f'count_values by ({by}) ("{STAMP}", {time})'
    return f"{value} + on ({by}) group_left ({STAMP}) (0 * {stamp})"


NODE_BY = DATED_BY[CARD_TIME]


def alike_recorded(value: str, time: str, *, marked: bool) -> str:
    """A card family's recorded series `value`, dated as `dated_recorded` dates them, with the
    cards of a node that all read the same value answered as one series of that node: its
    value, its node labels and, in `steward_cards`, how many card series it stands for. The
    cards of any other node come one series each. Nothing is approximated: a node's series is
    there only when its cards' largest and smallest values are equal (a NaN never is), and
    the join gives that value to each of the node's cards when the count is theirs
    (tools.metrics.prometheus.alike). `marked`: a memory family, whose cards marked as host
    memory (`memory_source`) always come one by one, with their mark."""
    alike = f"(max by ({NODE_BY}) ({value}) == min by ({NODE_BY}) ({value}))"
    if marked:
        alike = f'({alike} unless on ({NODE_BY}) {value}{{{UNIFIED_LABEL}!=""}})'
    count = f'count_values by ({NODE_BY}) ("{CARDS}", count by ({NODE_BY}) ({value}))'
    nodes = f"{alike} + on ({NODE_BY}) group_left ({CARDS}) (0 * {count})"
    cards = f"({value} unless on ({NODE_BY}) {alike})"
    return dated_recorded(f"({nodes} or {cards})", time)


def cards_recorded(value: str, time: str, nodes: list[dict[str, str]]) -> str:
    """The recorded series `value` of the cards of `nodes` (each a node's labels, as its
    series in an `alike_recorded` answer carries them), one series a card, dated."""
    chosen: dict[str, list[str]] = {}
    nameless = False
    """Whether a node series has no node label: it stands for the cards without one."""
    for labels in nodes:
        name = next((n for n in NODE_BY.split(", ") if n in labels), None)
        if name is None:
            nameless = True
        else:
            chosen.setdefault(name, []).append(_regex_literal(labels[name]))
    selectors = [
        f'{value}{{{name}=~"{"|".join(sorted(set(names)))}"}}' for name, names in chosen.items()
    ]
    if nameless:
        selectors.append(value + "{" + ", ".join(f'{n}=""' for n in NODE_BY.split(", ")) + "}")
    return dated_recorded(f"({' or '.join(selectors)})", time)


def _regex_literal(text: str) -> str:
    """`text` as a regular expression matching only itself, written inside a PromQL string
    (whose own escapes double a backslash)."""
    out: list[str] = []
    for c in text:
        if c == '"':
            out.append('\\"')
        elif c == "\\":
            out.append("\\" * 4)
        elif c in ".^$*+?()[]{}|":
            out.append("\\" * 2 + c)
        else:
            out.append(c)
    return "".join(out)


class Choices(Protocol):
    """What `resolve` reads of the settings (tools.metrics.prometheus.settings, which names the
    families of this module: so this module does not import it back)."""

    @property
    def queries(self) -> Mapping[str, str]: ...
    @property
    def timestamps(self) -> Mapping[str, str]: ...
    @property
    def window(self) -> str: ...
    @property
    def rules(self) -> Literal["recorded", "raw"]: ...
    @property
    def read_power(self) -> bool: ...


def resolve(settings: Choices) -> list[Resolved]:
    """The families in use: defaults with the settings' overrides; empty queries turn one off,
    and a family not read every tick (`power`) is read when `read_power` or a query of its own
    asks for it."""
    out: list[Resolved] = []
    for family in FAMILY_LIST:
        query = settings.queries.get(family.name, family.query)
        if not query.strip():
            continue
        if not family.ticked and not settings.read_power and family.name not in settings.queries:
            continue  # power: asked for by name only
        default = family.name not in settings.queries and family.name not in settings.timestamps
        if family.name in settings.timestamps:
            stamp = settings.timestamps[family.name]
        elif family.name in settings.queries:
            stamp = f"timestamp({query})"  # right for a selector; Prometheus's time for a function
        else:
            stamp = family.timestamp
        window = settings.window
        recorded, series = "", None
        if default and settings.rules == "recorded" and family.name in RECORDED:
            series = RECORDED[family.name]
            if family.target == "gpu":
                recorded = alike_recorded(*series, marked=family.marked)
            else:
                recorded, series = dated_recorded(*series), None
        out.append(
            Resolved(
                family=family,
                query=query.replace("{window}", window),
                timestamp=stamp.replace("{window}", window),
                default=default,
                recorded=recorded,
                recorded_series=series,
            )
        )
    return out
