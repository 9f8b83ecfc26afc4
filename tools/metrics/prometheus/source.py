"""`PrometheusSource`: a metric source that merges Prometheus's readings into an observation.

Each tick asks every family once (in parallel, over kept-alive connections), joins the series to
the observation's cards and workloads (tools.metrics.prometheus.join) and returns the
observation with those readings replaced. Nothing is invented: a card or workload no series
covers gets a missing reading that says so; when Prometheus is unreachable or refuses a query,
exactly that family's readings turn stale — the last value kept, with its own time — or missing
when there never was one, each with the source and the reason. `last_tick` tells how long the
queries and the join took, and what failed.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from tools.metrics.prometheus.alike import spread
from tools.metrics.prometheus.client import PrometheusClient, PrometheusUnavailable, QueryRefused
from tools.metrics.prometheus.fields import FieldReadings, Shared, metric
from tools.metrics.prometheus.indexes import CardIndex, WorkloadIndex
from tools.metrics.prometheus.join import SampleTimes, collect
from tools.metrics.prometheus.last_readings import LastReadings
from tools.metrics.prometheus.queries import CARDS, Resolved, cards_recorded, resolve
from tools.metrics.prometheus.readings import Readings
from tools.metrics.prometheus.settings import PrometheusSettings
from tools.metrics.prometheus.totals import Totals
from tools.metrics.prometheus.vector import Vector
from tools.model import ClusterState, Metric, Node, Workload

Answer = Vector | str
"""A family's answer, or why there is none ("unreachable: …", "query refused: …")."""


class TickReport(BaseModel):
    """How one read went: timings apart, families that failed and why, unmatched series."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query_ms: float
    """Wall time of all the family queries (HTTP, Prometheus, JSON decoding)."""
    join_ms: float
    """Matching the series to the observation and building the new one."""
    series: int
    node_series: int = 0
    """Of `series`, those that each stood for the cards of a node that read alike
    (tools.metrics.prometheus.alike)."""
    unmatched: int
    failed: dict[str, str] = {}
    from_rules: list[str] = []
    """The families answered from the series Steward's recording rules record; the others were
    read from the raw series (their rules absent, not evaluated yet, or `rules: raw`)."""


class Tick(NamedTuple):
    """One tick's readings, field by field, before they make the observation."""

    fields: dict[str, FieldReadings]
    shared: Shared
    cards: CardIndex


class PrometheusSource:
    """The Prometheus HTTP API as a `MetricSource` (name "prometheus")."""

    name = "prometheus"

    def __init__(
        self, settings: PrometheusSettings, client: PrometheusClient | None = None
    ) -> None:
        self.settings = settings
        self.client = client or PrometheusClient(
            settings.url, settings.timeout_s, settings.attempts
        )
        self.families: list[Resolved] = resolve(settings)
        self._pool = ThreadPoolExecutor(settings.parallel, thread_name_prefix="prometheus")
        self._workloads = WorkloadIndex()
        self._cards: CardIndex | None = None
        self._last: dict[str, LastReadings] = {}
        """Per family: the readings of the last tick that answered (values and times: the
        `Metric`s made of them go with the observation they were made for)."""
        self.last_tick: TickReport | None = None
        self._unmatched = 0
        self._from_rules: list[str] = []

    def close(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()

    def check(self) -> list[str]:
        """Every configured query parsed by Prometheus (`steward config check`)."""
        from tools.metrics.prometheus.check import check_queries

        return check_queries(self.settings, self.client)

    @property
    def from_rules(self) -> list[str]:
        """The families the last `ask` had answered from the recorded series."""
        return list(self._from_rules)

    def ask(self, at: float | None = None) -> dict[str, Answer]:
        """Every family's answer for this tick, evaluated at POSIX time `at` (None: now): from
        the recorded series where the family has them, else from the raw series."""
        recorded: set[str] = set()

        def one(family: Resolved) -> Answer:
            try:
                if family.recorded:
                    answer = self.client.query(family.recorded, at)
                    if len(answer):
                        recorded.add(family.name)
                        return answer
                return self.client.query(family.combined, at, family.reads)
            except PrometheusUnavailable as exc:
                return f"unreachable: {exc}"
            except QueryRefused as exc:
                return f"query refused: {exc}"
            except (ValueError, KeyError, TypeError) as exc:  # not what the API documents
                return f"unreadable answer: {type(exc).__name__}: {exc}"

        answers = dict(
            zip(
                (f.name for f in self.families),
                self._pool.map(one, self.families),
                strict=True,
            )
        )
        self._from_rules = sorted(recorded)
        return answers

    def read(self, state: ClusterState) -> ClusterState:
        """The observation with this source's readings merged in."""
        start = time.perf_counter()
        at = state.observed_at.timestamp() if self.settings.evaluate_at == "observation" else None
        answers = self.ask(at)
        query_s = time.perf_counter() - start
        given = [a for a in answers.values() if isinstance(a, Vector)]
        series = sum(map(len, given))
        nodes = sum(len(a) - a.column(CARDS).count(None) for a in given)
        joining = time.perf_counter()
        spread, unplaced = self.spread_cards(state, answers)
        join_s = time.perf_counter() - joining
        if unplaced:  # nodes whose cards the node series could not stand for: one by one
            asking = time.perf_counter()
            more = self.ask_cards(spread, unplaced, at)
            query_s += time.perf_counter() - asking
            series += sum(
                len(more[name]) - len(answer)
                for name, answer in spread.items()
                if isinstance(answer, Vector)
            )
            spread = more
        joining = time.perf_counter()
        merged = self.merge(state, spread)
        join_s += time.perf_counter() - joining
        self.last_tick = self.last_tick_report(answers, series, query_s, join_s, nodes)
        return merged

    def spread_cards(
        self, state: ClusterState, answers: Mapping[str, Answer]
    ) -> tuple[dict[str, Answer], dict[str, list[dict[str, str]]]]:
        """Each card family's answer with one series per card (tools.metrics.prometheus.alike),
        and per family the node series that could not stand for their node's cards."""
        cards = self._card_index(state)
        out = dict(answers)
        unplaced: dict[str, list[dict[str, str]]] = {}
        for family in self.families:
            answer = answers.get(family.name)
            if family.family.target == "gpu" and isinstance(answer, Vector):
                out[family.name], left = spread(answer, cards)
                if left:
                    unplaced[family.name] = left
        return out, unplaced

    def ask_cards(
        self,
        answers: dict[str, Answer],
        unplaced: dict[str, list[dict[str, str]]],
        at: float | None,
    ) -> dict[str, Answer]:
        """`answers` with the cards of the `unplaced` nodes asked for one by one, each family's
        added to its answer (a family whose second query fails keeps its answer: those cards
        have no series this tick)."""
        out = dict(answers)
        for family in self.families:
            nodes, answer = unplaced.get(family.name), answers.get(family.name)
            if not nodes or family.recorded_series is None or not isinstance(answer, Vector):
                continue
            query = cards_recorded(*family.recorded_series, nodes)
            try:
                more = self.client.query(query, at, family.reads)
            except (PrometheusUnavailable, QueryRefused, ValueError, KeyError, TypeError):
                continue
            out[family.name] = Vector(answer.evaluated_at, answer.series + more.series)
        return out

    def last_tick_report(
        self,
        answers: dict[str, Answer],
        series: int,
        query_s: float,
        join_s: float,
        node_series: int = 0,
    ) -> TickReport:
        return TickReport(
            query_ms=round(query_s * 1000, 3),
            join_ms=round(join_s * 1000, 3),
            series=series,
            node_series=node_series,
            unmatched=self._unmatched,
            failed={k: v for k, v in answers.items() if isinstance(v, str)},
            from_rules=self._from_rules,
        )

    def merge(self, state: ClusterState, answers: Mapping[str, Answer]) -> ClusterState:
        """The join and the new observation (apart from `ask`, so that it can be timed alone)."""
        return self.observation(state, self.fields(state, answers))

    def _card_index(self, state: ClusterState) -> CardIndex:
        cards = self._cards
        if cards is None:
            cards = self._cards = CardIndex(state)
        else:
            cards.refresh(state)
        return cards

    def fields(self, state: ClusterState, answers: Mapping[str, Answer]) -> Tick:
        """Each field's readings this tick, from the answers (what the next tick needs of them
        kept)."""
        cards = self._card_index(state)
        self._workloads.refresh(state)
        self._unmatched = 0
        # One clock for the tick: each family's query is evaluated at Prometheus's own now,
        # seconds apart on a busy server. Every age is measured from the latest, so that a
        # sample has one age (and one instant) whichever family carries it.
        evaluated = [a.evaluated_at for a in answers.values() if isinstance(a, Vector) and len(a)]
        shared, times = Shared(), SampleTimes(max(evaluated, default=None))
        fields: dict[str, FieldReadings] = {}
        for family in self.families:
            answer = answers.get(family.name, "not asked")
            if family.family.target == "gpu" and isinstance(answer, Vector):
                answer = spread(answer, cards)[0]  # a node's series: its cards' (none left)
            fields[family.family.field] = self._field(
                family, answer, state, cards, shared=shared, times=times
            )
        return Tick(fields, shared, cards)

    def observation(self, state: ClusterState, tick: Tick) -> ClusterState:
        """`state` with the tick's readings."""
        nodes = self._nodes(state, tick.fields, tick.shared, tick.cards)
        workloads = self._workloads_with(state, tick.fields)
        return state.model_copy(update={"nodes": nodes, "workloads": workloads})

    def _field(
        self,
        family: Resolved,
        answer: Answer,
        state: ClusterState,
        cards: CardIndex,
        *,
        shared: Shared,
        times: SampleTimes,
    ) -> FieldReadings:
        name = family.name
        source = f"prometheus:{name}"
        before = self._last.get(name)
        if isinstance(answer, str):
            # The last good readings, stale, with this tick's reason; missing where none.
            why = f"{source}: {answer}"
            return FieldReadings(metric(None, "missing", None, why), previous=before)
        readings = collect(family, answer, cards, self._workloads, times)
        self._unmatched += readings.unmatched
        out = FieldReadings(
            metric(None, "missing", None, f"{source}: no series"),
            readings=readings,
            now=state.observed_at,
            source=source,
            bound=self.settings.staleness_s,
            shared=shared,
            positions=cards.position if family.family.target == "gpu" else None,
        )
        no_data = metric(None, "missing", None, f"{source}: no data in the window")
        for key in readings.no_data:
            out.override(key, no_data)
        # A series that was there and is gone (its target stopped answering, a staleness
        # marker) leaves the last reading stale, while its card or workload is observed. No
        # card's can be gone when every card of the observation has a reading (a column), and
        # only the holes' of one; most other ticks read again every key of the last (checked by
        # a subset test first).
        if before is not None and not readings.covers(cards.order):
            gone = f"{source}: no series since its last sample"
            present = cards.uuids if family.family.target == "gpu" else self._workloads.names
            for key in _gone(before, readings, cards.order):
                last = before.last(key)
                if key in present and last is not None:
                    out.carried[key] = last
                    out.override(key, metric(last[0], "stale", last[1], gone))
        self._last[name] = out.this_tick
        return out

    def _nodes(
        self,
        state: ClusterState,
        fields: dict[str, FieldReadings],
        shared: Shared,
        cards: CardIndex,
    ) -> tuple[Node, ...]:
        """Every card with its readings: one lookup per card and field, the rest shared."""
        uuids = cards.order
        plain = [
            (f, found)
            for f in ("utilization", "memory_used_bytes", "power_w")
            if (found := fields.get(f)) is not None
        ]
        used, free = fields.get("memory_used_bytes"), fields.get("memory_free_bytes")
        if not plain and free is None:
            return state.nodes
        total = Totals(free, shared) if used is not None and free is not None else None
        # Column by column (each a lookup in C, where the answer was not read as one): a
        # fleet's 8,000 cards, one field a column.
        columns = {name: _in_order(readings, cards) for name, readings in plain}
        if total is not None and used is not None:
            column = total.batch(used, uuids)
            if column is None:
                column = total.every(columns["memory_used_bytes"], uuids)
            columns["memory_total_bytes"] = column
        every = [gpu for node in state.nodes for gpu in node.gpus]
        made = [
            gpu.model_copy(update={name: column[at] for name, column in columns.items()})
            for at, gpu in enumerate(every)
        ]
        nodes: list[Node] = []
        start = 0
        for node in state.nodes:
            end = start + len(node.gpus)
            nodes.append(node.model_copy(update={"gpus": tuple(made[start:end])}))
            start = end
        return tuple(nodes)

    def _workloads_with(
        self, state: ClusterState, fields: dict[str, FieldReadings]
    ) -> tuple[Workload, ...]:
        names = (
            "queue_depth",
            "requests_running",
            "kv_cache_usage",
            "ttft_s",
            "itl_s",
            "queue_wait_s",
            "tokens_per_s",
            "prompt_tokens_per_s",
            "requests_per_s",
        )
        present = [(n, fields[n]) for n in names if n in fields]
        epp, jobs = fields.get("epp_queue"), fields.get("jobs_waiting")
        if not present and epp is None and jobs is None:
            return state.workloads
        out: list[Workload] = []
        for workload in state.workloads:
            values: dict[str, Metric] = {"queue_depth": workload.queue_depth}
            for name, found in present:
                values[name] = found.get(workload.name)
            if epp is not None and not values["queue_depth"].usable:
                average = epp.get(workload.name)
                if average.value is not None:
                    values["queue_depth"] = _from_pool(average, workload)
            if jobs is not None and not values["queue_depth"].usable:
                waiting = jobs.get(workload.name)
                if waiting.value is not None:
                    values["queue_depth"] = waiting  # a job queue's, not an engine's
            out.append(workload.model_copy(update=values))
        return tuple(out)


def _gone(before: LastReadings, readings: Readings, order: list[str]) -> Iterable[str]:
    """The keys that had a reading (read, or carried stale) and have none now."""
    column = readings.column
    if readings.in_order(order) and column is not None:
        return [order[at] for at in column.holes]
    if not _lost(before, readings):
        return ()
    read = before.readings.values.keys() if before.readings else frozenset()
    had = before.carried.keys() | read
    return had - readings.values.keys() - readings.no_data


def _lost(before: LastReadings, readings: Readings) -> bool:
    """Whether a key the last tick had (read, or carried stale) may be without a series now."""
    if before.carried:
        return True
    read = before.readings.values.keys() if before.readings else frozenset()
    return not read <= readings.values.keys()


def _in_order(readings: FieldReadings, cards: CardIndex) -> list[Metric]:
    """A field's reading of every card, in the card order."""
    column = readings.column(cards.order)
    if column is not None:
        return column
    return list(map(readings.every(cards.order, cards.uuids).__getitem__, cards.order))


def _from_pool(average: Metric, workload: Workload) -> Metric:
    """The endpoint picker's average queue of the pool, times the workload's ready replicas."""
    assert average.value is not None
    total = average.value * max(workload.ready_replicas, 1)
    return metric(
        total,
        average.status,
        average.observed_at,
        f"{average.source} (average x {max(workload.ready_replicas, 1)} replicas)",
    )
