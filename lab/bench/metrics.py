"""`steward bench metrics`: one tick of the Prometheus source at fleet size, through a real one.

The fleet of `steward bench policy` (N nodes of eight H200, ~70 % of the cards serving) gets a
reading on every card and engine; it is served under DCGM's and vLLM's names
(tools.metrics.exposition) — a DCGM exporter per node, as its DaemonSet runs, and every engine
pod, as Prometheus's pod discovery scrapes them, each its own scrape target with its own sample
times (`--targets one`: one exporter for every card, one for every engine) — a real Prometheus
(the `prometheus` binary) scrapes it with Steward's recording rules loaded
(tools/metrics/prometheus/rules.yaml), and the source asks its families — the series the rules
record, as a tick of the loop asks them: cards with the join's labels only, engines already
aggregated per workload — and joins the answers to
the same fleet with no readings, each time on the answers decoded afresh from the text
Prometheus sent, by the client's own code, as every tick's are. The join — matching the series
to cards and workloads and building the new observation — is timed apart from the queries
(HTTP, Prometheus's evaluation, decoding), which a deployment's network and Prometheus
dominate; decoding is reported on its own too. Each join's observation is kept until the next
tick's answers come, as the loop keeps its observation through a tick: freeing the last one
is not the join's work. The joins are timed after `STEADY_AFTER` untimed ones, as a
daemon's run. Target: the join's p99 within 100 ms at 1,000
nodes / 8,000 cards.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Literal

import typer
from pydantic import BaseModel

from agent.cli.common import EXIT_BAD_INPUT, EXIT_CHECK_FAILED, JsonOpt, console, emit_json, fail
from lab.bench.policy_fleet import fleet_state
from lab.bench.prometheus_server import PrometheusMissing, RealPrometheus
from lab.cli import bench
from lab.twin.engines import EngineExporter
from tools.metrics.exposition import card_lines, render
from tools.metrics.prometheus import PrometheusSettings, PrometheusSource
from tools.metrics.prometheus.client import vector_from
from tools.metrics.prometheus.queries import RULES_FILE, Resolved
from tools.metrics.prometheus.source import Answer
from tools.metrics.prometheus.vector import Vector
from tools.metrics.serve import MetricsServer
from tools.model import MISSING, ClusterState, Gpu, Metric

TARGET_P99_MS = 100.0
RULES_WAIT_S = 60.0
"""How long the recording rules may take to answer every family they record (a rate's needs
two scrapes in its window) before the answers are taken as they are."""
STEADY_AFTER = 100
"""Untimed ticks before the timed ones: a process's heap settles into its long-run layout over
its first ~100 ticks (the same join took 37 ms at the first and 45 ms from the hundredth on,
with no more objects or memory), and a daemon lives in that layout."""
_POD = re.compile(r'[{,]pod="([^"]+)"')
Targets = Literal["per-node", "one"]
WORKLOAD_READINGS = (
    "queue_depth",
    "queue_wait_s",
    "tokens_per_s",
    "ttft_s",
    "running",
    "kv_cache_usage",
)


class MetricsBench(BaseModel):
    nodes: int
    cards: int
    workloads: int
    series: int
    """Series in one tick's answers: every family the tick reads, each answered from the series
    Steward's recording rules record (what a tick joins, as the loop's)."""
    from_rules: list[str]
    """The families the recording rules answered in the answers the joins are timed on (the
    others from the raw series)."""
    scrape_targets: int
    """Targets Prometheus scrapes: a DCGM exporter per node and each engine pod (or one for all
    cards and one for all engines)."""
    matched_cards: int
    matched_workloads: int
    card_sample_times: int
    """Distinct sample times among the cards' readings: one per DCGM exporter scraped."""
    runs: int
    """Joins timed: enough for a p99 that is not simply the slowest one (30 made it the max)."""
    median_ms: float
    """The join, median."""
    p99_ms: float
    """The join, p99."""
    max_ms: float
    """The join, slowest."""
    join_cpu_median_ms: float
    """The join's CPU time (this process only), median: what a busy machine cannot inflate."""
    query_median_ms: float
    query_p99_ms: float
    decode_median_ms: float
    """Of the queries' time, decoding the answers' JSON text (all families, one tick): as
    much the agent's own work as the join, though not the target's."""
    target_p99_ms: float = TARGET_P99_MS
    within_target: bool
    peak_rss_mb: float


def with_readings(state: ClusterState) -> ClusterState:
    """The fleet with a distinct fresh reading on every card and serving workload."""
    at = state.observed_at
    clients: dict[str, str] = {}
    for w in state.workloads:
        for r in w.placement:
            for uuid in r.gpus:
                clients[uuid] = f"{w.name}/{r.index}"
    nodes = []
    for i, node in enumerate(state.nodes):
        gpus = tuple(
            g.model_copy(
                update={
                    "utilization": Metric.fresh(float((i * 8 + g.index) % 101), at, "truth"),
                    # Memory and power differ card by card, as a fleet's do: no reading
                    # of the benchmark is shared by chance that a real one would not share.
                    "memory_used_bytes": Metric.fresh(
                        float(((i * 8 + g.index) % 1009 + 1) * 2**27), at, "truth"
                    ),
                    "memory_total_bytes": Metric.fresh(float(141 * 2**30), at, "truth"),
                    "power_w": Metric.fresh(
                        round(100.0 + (i * 8 + g.index) * 0.0731, 3), at, "truth"
                    ),
                    "clients": (clients[g.uuid],) if g.uuid in clients else (),
                }
            )
            for g in node.gpus
        )
        nodes.append(node.model_copy(update={"gpus": gpus}))
    workloads = tuple(
        w.model_copy(
            update={
                "queue_depth": Metric.fresh(float(j % 9), at, "truth"),
                "requests_running": Metric.fresh(float(j % 5), at, "truth"),
                "kv_cache_usage": Metric.fresh(0.5, at, "truth"),
                "ttft_s": Metric.fresh(0.3, at, "truth"),
                "queue_wait_s": Metric.fresh(1.2, at, "truth"),
                "tokens_per_s": Metric.fresh(200.0, at, "truth"),
            }
        )
        for j, w in enumerate(state.workloads)
    )
    return state.model_copy(update={"nodes": tuple(nodes), "workloads": workloads})


def without_readings(state: ClusterState) -> ClusterState:
    """The cluster with every reading missing, as a backend without metrics observes it."""
    nodes = tuple(
        n.model_copy(
            update={
                "gpus": tuple(
                    Gpu(uuid=g.uuid, index=g.index, model=g.model, node=g.node, clients=g.clients)
                    for g in n.gpus
                )
            }
        )
        for n in state.nodes
    )
    workloads = tuple(
        w.model_copy(update=dict.fromkeys(WORKLOAD_READINGS, MISSING)) for w in state.workloads
    )
    return state.model_copy(update={"nodes": nodes, "workloads": workloads})


def run_bench(nodes: int, runs: int, targets: Targets = "per-node") -> MetricsBench:
    truth = with_readings(fleet_state(nodes, dcgm_uuids=True))
    engines = EngineExporter()
    engines.update(truth)
    later = truth.model_copy(update={"observed_at": truth.observed_at + timedelta(seconds=1)})
    engines.update(later)
    if targets == "per-node":
        # A DCGM exporter per node, as its DaemonSet runs: each a target of its own (its own
        # `instance`), scraped at its own moment, so that the cards' readings carry a
        # thousand sample times, not one. And every engine pod a target, as Prometheus's pod
        # discovery scrapes them: its series dated by their own pod's scrape.
        routes = {
            f"/dcgm/{node.name}/metrics": _body(
                render(card_lines(truth.model_copy(update={"nodes": (node,)})))
            )
            for node in truth.nodes
        }
        for pod, lines in per_pod(engines.lines()).items():
            routes[f"/engines/{pod}/metrics"] = _body(render(lines))
    else:
        routes = {"/dcgm/all/metrics": _body(render(card_lines(truth)))}
        routes["/engines/metrics"] = _body(render(engines.lines()))
    server = MetricsServer(routes=routes).start()
    address = f"127.0.0.1:{server.port}"
    groups = [
        {"targets": [address], "labels": {"__metrics_path__": path, "instance": path}}
        for path in routes
    ]
    # Every 10 s: this machine's Python exporter answers 4,300 scrapes in time at that pace.
    jobs = [{"job_name": "exporters", "scrape_timeout": "10s", "static_configs": groups}]
    try:
        with tempfile.TemporaryDirectory(prefix="steward-bench-prom-") as tmp:
            prometheus = RealPrometheus(
                Path(tmp), [], interval="10s", jobs=jobs, rules=(RULES_FILE,)
            )
            with prometheus:
                prometheus.wait_for_scrapes(2, timeout_s=180)
                prometheus.wait_for_rules(timeout_s=120)
                # Every card and engine read, as a healthy fleet's are: a target that missed
                # its scrape would have the join read its family by keys, not as a column.
                prometheus.wait_until_up(len(routes), timeout_s=120)
                settings = PrometheusSettings(url=prometheus.url, window="1m", timeout_s=60)
                source = PrometheusSource(settings)
                try:
                    return _measure(source, truth, runs, prometheus, targets=len(routes))
                finally:
                    source.close()
    finally:
        server.stop()


def per_pod(lines: list[str]) -> dict[str, list[str]]:
    """An exposition of many engines as each pod's own: its samples (by their `pod` label),
    each family's TYPE line first."""
    out: dict[str, list[str]] = {}
    family = ""
    for line in lines:
        if line.startswith("#"):
            family = line if line.startswith("# TYPE ") else family
            continue
        found = _POD.search(line)
        if found is None:
            raise ValueError(f"an engine sample without a pod: {line!r}")
        own = out.setdefault(found.group(1), [])
        if family and family not in own:
            own.append(family)
        own.append(line)
    return out


def recorded_answers(answers: dict[str, Answer]) -> dict[str, tuple[str, float]]:
    """Each family's answer as the JSON text Prometheus sent, to be decoded afresh for every
    join, and its evaluation time (which an answer without series does not carry)."""
    return {
        name: (answer.text, answer.evaluated_at)
        for name, answer in answers.items()
        if isinstance(answer, Vector)
    }


def decoded_answers(
    recorded: dict[str, tuple[str, float]], families: list[Resolved] | None = None
) -> dict[str, Answer]:
    """The answers decoded again, by the client's own code, with the columns each family's
    join reads: label sets and strings as new, and laid out in memory, as the client's each
    tick."""
    reads = {f.name: f.reads for f in families or ()}
    return {
        name: vector_from(text, name, at, reads.get(name, ()))
        for name, (text, at) in recorded.items()
    }


def _body(payload: bytes) -> Callable[[], bytes]:
    return lambda: payload


def _measure(
    source: PrometheusSource,
    truth: ClusterState,
    runs: int,
    prometheus: RealPrometheus,
    *,
    targets: int,
) -> MetricsBench:
    bare = without_readings(truth)
    answers = source.ask()
    # The rules of rates and quantiles record nothing until their window holds two scrapes:
    # until then those families are read from the raw series, not as a tick reads them.
    ruled = {f.name for f in source.families if f.recorded}
    deadline = time.monotonic() + RULES_WAIT_S
    while set(source.from_rules) != ruled and time.monotonic() < deadline:
        time.sleep(2.0)
        answers = source.ask()
    from_rules = source.from_rules
    failed = {k: v for k, v in answers.items() if isinstance(v, str)}
    if failed:
        raise RuntimeError(f"queries failed: {failed}")
    # A few queries suffice (seconds each): they are reported, not the target.
    query = bench.measure("metrics-query", source.ask, runs=min(6, max(3, runs // 5)), warmup=1)
    # The join is the agent's own work: timed with Prometheus stopped, so that its scrapes of
    # 8,000 cards do not take the CPU from under it on a small machine.
    prometheus.kill()
    cpu: list[float] = []
    # Each join gets answers decoded afresh, as every tick's are: new label sets and strings,
    # whose hashes are yet to be worked out and which lie where the decoder left them. (Joining
    # one decoded answer again and again took a median of 68-76 ms where fresh ones took 107.)
    recorded = recorded_answers(answers)
    tick: dict[str, dict[str, Answer]] = {"answers": answers}
    decode: list[float] = []
    kept: list[ClusterState] = []
    """The last join's observation, kept until the next tick's answers come, as the loop keeps
    its observation through a tick: a join makes an observation, it does not free the last."""

    def next_tick() -> None:
        kept.clear()
        start = time.perf_counter()
        tick["answers"] = decoded_answers(recorded, source.families)
        decode.append((time.perf_counter() - start) * 1000)

    join = bench.measure(
        "metrics-join",
        lambda: kept.append(source.merge(bare, tick["answers"])),
        runs,
        warmup=STEADY_AFTER,
        setup=next_tick,
        cpu_ms=cpu,
    )
    joined = source.merge(bare, answers)
    cards = [g for n in joined.nodes for g in n.gpus]
    return MetricsBench(
        nodes=len(joined.nodes),
        cards=len(cards),
        workloads=len(joined.workloads),
        series=sum(len(a) for a in answers.values() if not isinstance(a, str)),
        from_rules=from_rules,
        scrape_targets=targets,
        matched_cards=sum(1 for g in cards if g.utilization.usable and g.memory_used_bytes.usable),
        matched_workloads=sum(1 for w in joined.workloads if w.queue_depth.usable),
        card_sample_times=len({g.utilization.observed_at for g in cards}),
        runs=join.runs,
        median_ms=join.median_ms,
        p99_ms=join.p99_ms,
        max_ms=join.max_ms,
        join_cpu_median_ms=round(statistics.median(cpu), 3),
        query_median_ms=query.median_ms,
        query_p99_ms=query.p99_ms,
        decode_median_ms=round(statistics.median(decode), 3),
        within_target=join.p99_ms <= TARGET_P99_MS,
        peak_rss_mb=bench.peak_rss_mb(),
    )


@bench.app.command("metrics")
def metrics(
    nodes: Annotated[int, typer.Option("--nodes", min=1, max=5000)] = 1000,
    runs: Annotated[int, typer.Option("--runs", min=3, max=1000)] = 100,
    targets: Annotated[
        Targets,
        typer.Option(
            "--targets",
            help="per-node: a DCGM exporter per node, as a DaemonSet runs it, and each engine "
            "pod its own target; one: one exporter for every card, one for every engine",
        ),
    ] = "per-node",
    json_out: JsonOpt = False,
) -> None:
    """One tick of the Prometheus source (queries, then the join) at N nodes of 8 cards."""
    try:
        figures = run_bench(nodes, runs, targets)
    except PrometheusMissing as exc:
        fail(str(exc), EXIT_BAD_INPUT)
    except TimeoutError as exc:  # a loaded machine: its exporter or Prometheus fell behind
        fail(f"the bench's Prometheus was not ready: {exc}", EXIT_CHECK_FAILED)
    if json_out:
        emit_json(figures)
    else:
        console.print(
            f"{figures.nodes} nodes, {figures.cards} cards, {figures.series} series from "
            f"{figures.scrape_targets} targets ({len(figures.from_rules)} families from the "
            f"recording rules, as a tick reads them): join "
            f"{figures.median_ms:.1f} ms median, {figures.p99_ms:.1f} ms p99 (target "
            f"{TARGET_P99_MS:g}); queries {figures.query_median_ms:.1f} ms median, "
            f"{figures.query_p99_ms:.1f} ms p99 (decoding {figures.decode_median_ms:.1f} ms); "
            f"matched {figures.matched_cards} cards, "
            f"{figures.matched_workloads} workloads"
        )
    if not figures.within_target:
        raise typer.Exit(EXIT_CHECK_FAILED)
