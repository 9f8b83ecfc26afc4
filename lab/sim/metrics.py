"""Scrapes and series: what the simulated exporters report, and when.

A node's exporter (DCGM-like) reports per card utilization (busy share since the last scrape),
memory used and power (idle ~11 % of the limit, PARTS.md); a workload's gateway reports queue
depth, queue wait (the oldest waiting request's age, or the mean wait of those admitted since
the last scrape), tokens per second and time to first token; a link's exporter reports each
path's negotiated speed and GID index. A lost node reports nothing, so its last readings age.
A render workload's job queue reports its depth and wait like a gateway (no tokens, no time to
first token); a batch worker has no queue and exports no queue metrics: they are missing.
"""

from __future__ import annotations

import math

from lab.sim.state import CardSample, SeriesRow, WorkloadRun
from lab.sim.world import World

SERIES_KEEP_S = 86_400.0
"""The series keeps the last day in memory (a daemon runs for weeks)."""

REFUSALS_KEEP_S = 300.0
"""The gateway reports the longest request refused for its context over this window (what a
`max_over_time(…[5m])` over its context-length errors gives)."""

IDLE_POWER_SHARE = 0.11
PROCESS_HOST_BYTES = 4 * 1024**3
"""Host memory one replica's process holds on a node with discrete cards."""


def scrape_node(engine: World, name: str) -> None:
    st = engine.state
    node = st.nodes[name]
    if node.lost:
        return
    t = st.t
    spec = engine.placer.nodes[name]
    elapsed = max(t - node.last_scrape_s, 1e-9)
    busy_now: dict[str, float] = {}
    host_used = spec.os_memory_bytes
    for uuid in engine.placer.node_cards[name]:
        card = engine.placer.card_spec[uuid]
        util = 0.0
        for client in engine.placer.clients[uuid]:
            r = engine.placer.owners.get(client)
            if r is None:
                continue
            busy = busy_now[client] = engine.replica_busy_s(r)
            if client in node.last_busy:
                util += (busy - node.last_busy[client]) / elapsed
            elif r.phase == "ready":
                # First reading of a replica already running: its steady share (batch, render).
                util += engine.steady_utilization(r)
        util = round(min(1.0, max(0.0, util)), 2)
        used = engine.placer.card_used(uuid)
        host_used += (
            used if spec.unified_memory else PROCESS_HOST_BYTES * len(engine.placer.clients[uuid])
        )
        idle = card.power_limit_w * IDLE_POWER_SHARE
        power = round(idle + (card.power_limit_w - idle) * util)
        node.cards[uuid] = CardSample(t, util, used, power)
    node.memory_sample = (t, host_used)
    node.last_busy = busy_now
    node.last_scrape_s = t
    engine.dirty_nodes.add(name)


def scrape_workload(engine: World, name: str) -> None:
    spec = engine.specs[name]
    if spec.serving is None and not spec.runs_jobs:
        return
    st = engine.state
    run = st.workloads[name]
    t = st.t
    w = run.scrape
    elapsed = max(t - run.last_scrape_s, 1e-9)
    oldest = oldest_waiting(run)
    if oldest is not None:
        wait: float | None = t - oldest
    else:
        wait = w.wait_sum / w.wait_n if w.wait_n else 0.0
    ttft = quantile(w.ttfts, 0.9)
    itl = None if spec.runs_jobs else quantile(w.itls, 0.9)
    tok_s = None if spec.runs_jobs else round(w.tokens / elapsed, 2)
    prompt_s = None if spec.runs_jobs else round(w.prompt_tokens / elapsed, 2)
    done_s = round(w.completed / elapsed, 4)
    running = float(sum(r.server.in_flight for r in run.replicas))
    if w.longest_rejected:
        run.refusals.append((t, w.longest_rejected))
    run.refusals[:] = [r for r in run.refusals if t - r[0] <= REFUSALS_KEEP_S]
    longest = max((r[1] for r in run.refusals), default=0)
    refused = None if spec.runs_jobs else float(longest)
    depth = float(waiting_count(run))
    longest_now = None if spec.runs_jobs else float(_longest(run))
    kv = None if spec.runs_jobs else kv_cache_usage(engine, name)
    run.sample = (t, depth, _r(wait), tok_s, _r(ttft), running, refused, longest_now,
                  kv, _r(itl), prompt_s, done_s)  # fmt: skip
    run.last_scrape_s = t
    w.reset()
    engine.dirty_workloads.add(name)


def kv_cache_usage(engine: World, name: str) -> float | None:
    """The fullest ready replica's KV cache, 0..1 (vLLM's kv_cache_usage_perc); None: none is
    ready or the workload has no cache to measure."""
    capacity = engine.kv_capacity[name]
    run = engine.state.workloads[name]
    used = [r.server.kv_used for r in run.replicas if r.phase == "ready"]
    if not used or capacity <= 0:
        return None
    return round(min(1.0, max(used) / capacity), 4)


def quantile(values: list[tuple[float, float]], q: float) -> float | None:
    """The `q` quantile of (value, weight) pairs; None if there are none."""
    total = sum(n for _, n in values)
    if total <= 0:
        return None
    rank = q * total
    seen = 0.0
    for value, n in sorted(values):
        seen += n
        if seen >= rank:
            return value
    return max(v for v, _ in values)


def scrape_links(engine: World) -> None:
    st = engine.state
    for link in engine.profile.links:
        if any(st.nodes[n].lost for n in link.nodes):
            continue
        for path in link.paths:
            gbps, gid = engine.path_reading(
                link.name, path.name, path.healthy_gbps, link.gid_index, st.t
            )
            st.link_samples[f"{link.name}/{path.name}"] = (st.t, round(gbps, 2), gid)
    engine.dirty_links = True


def record_series(engine: World) -> None:
    st = engine.state
    t = st.t
    for name, run in st.workloads.items():
        spec = engine.specs[name]
        w = run.series
        elapsed = max(t - run.last_series_s, 1e-9)
        ready = [r for r in run.replicas if r.phase == "ready"]
        busy = {r.client: engine.replica_busy_s(r) for r in run.replicas}
        delta = sum(max(0.0, b - run.last_busy.get(c, b)) for c, b in busy.items())
        util = min(1.0, delta / elapsed / max(1, len(busy))) if ready else 0.0
        oldest = oldest_waiting(run)
        if oldest is not None:
            wait: float | None = t - oldest
        else:
            queued = spec.serving is not None or spec.runs_jobs
            wait = w.wait_sum / w.wait_n if w.wait_n else (0.0 if queued else None)
        st.series.append(
            SeriesRow(
                t=t,
                workload=name,
                queue_depth=round(waiting_count(run)),
                queue_wait_s=_r(wait),
                ttft_s=_r(w.ttft_sum / w.ttft_n if w.ttft_n else None),
                utilization=round(util, 3),
                tokens_per_s=round(w.tokens / elapsed, 2),
                tokens_total=round(run.tokens_total, 1),
                stream_tok_s=_r(w.stream_sum / w.stream_n if w.stream_n else None),
                ready_replicas=len(ready),
                completed=round(w.completed),
                rejected=round(w.rejected),
                aborted=round(w.aborted),
            )
        )
        run.last_busy = busy
        run.last_series_s = t
        w.reset()
    keep = math.ceil(SERIES_KEEP_S / engine.profile.series_interval_s) * len(st.workloads)
    if len(st.series) > keep * 1.25:  # trim in chunks, not on every point
        del st.series[: len(st.series) - keep]


def oldest_waiting(run: WorkloadRun) -> float | None:
    """Arrival time of the oldest request waiting to be served, at the gateway or in a
    replica's queue (None: nobody waits).

    Readers outside the serving model (the benchmark's plots, the exporters) ask this rather
    than look into the queues, whose layout is the serving model's business."""
    oldest = run.queue[0].arrival_s if run.queue else None
    for r in run.replicas:
        if r.server.waiting:
            a = r.server.waiting[0].arrival_s
            if oldest is None or a < oldest:
                oldest = a
    return oldest


def waiting_count(run: WorkloadRun) -> float:
    """Requests waiting to be served: at the gateway and in the replicas' queues."""
    return sum(r.count for r in run.queue) + sum(r.server.waiting_n for r in run.replicas)


def _longest(run: WorkloadRun) -> int:
    """Tokens (input + output) of the longest request queued or running."""
    longest = max((r.input_tokens + r.output_tokens for r in run.queue), default=0)
    for r in run.replicas:
        server = r.server
        longest = max(longest, max((f.kv_tokens for f in server.waiting), default=0))
        longest = max(longest, max((f.kv_tokens for f in server.prefilling), default=0))
        longest = max(longest, max((f.kv_tokens for _, _, f in server.decoding), default=0))
    return longest


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)
