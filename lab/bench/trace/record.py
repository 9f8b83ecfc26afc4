"""The measuring side of a replay: every request's wait and TTFT, arrivals, cards, watts.

None of this is what a controller reads (they read `observe()` and the gateway, as in real
life); it is what the benchmark's referee sees:
- `RecordingWindow` replaces a driven workload's series window and keeps, per admitted,
  first-token or finished event, the request's figures in a `Sink`;
- `Tally` wraps the sim's demand generators: it counts what arrives (what a real frontend's
  request counters export: Dynamo's planner reads these), and apart what arrives within the
  scored window; arrivals go on after it until the run ends (no controller profits from the
  run's end);
- `JobTrace` replays a `TIMESTAMP,GpuSeconds` render job trace;
- `Meter` integrates, step by step, the cards the driven workloads hold, how busy they are and
  what they draw (idle ~11 % of the limit, as the sim's exporters report it).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime

from lab.sim.demand import DemandSpec, Generator, PoissonArrivals, RenderDemand, Request
from lab.sim.engine import Engine
from lab.sim.metrics import IDLE_POWER_SHARE
from lab.sim.serving import Window


@dataclass(slots=True)
class Sink:
    """Per-request events of the driven workloads: (arrival s, seconds, count)."""

    waits: list[tuple[float, float, float]] = field(default_factory=list)
    ttfts: list[tuple[float, float, float]] = field(default_factory=list)
    finished: list[tuple[float, float, float | None, float]] = field(default_factory=list)
    """(arrival s, TTFT s, mean inter-token latency s or None, count) of completed requests."""


@dataclass(slots=True)
class RecordingWindow(Window):
    """A series window that also hands each request's wait and TTFT to a `Sink`."""

    sink: Sink | None = None

    def admitted(self, wait_s: float, arrival_s: float, count: float) -> None:
        Window.admitted(self, wait_s, arrival_s, count)
        if self.sink is not None:
            self.sink.waits.append((arrival_s, wait_s, count))

    def first_token(self, ttft_s: float, arrival_s: float, count: float) -> None:
        Window.first_token(self, ttft_s, arrival_s, count)
        if self.sink is not None:
            self.sink.ttfts.append((arrival_s, ttft_s, count))

    def finished(
        self, arrival_s: float, ttft_s: float, itl_s: float | None, output_tokens: int, count: float
    ) -> None:
        Window.finished(self, arrival_s, ttft_s, itl_s, output_tokens, count)
        if self.sink is not None:
            self.sink.finished.append((arrival_s, ttft_s, itl_s, count))


@dataclass(slots=True)
class Arrivals:
    """What a frontend counts: requests, input and output tokens, job seconds (cumulative)."""

    requests: float = 0.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    work_s: float = 0.0


class Tally(Generator):
    """A sim generator that counts its arrivals by target and emits none after `end_s`."""

    def __init__(
        self,
        spec: DemandSpec,
        seed: int,
        start: datetime,
        *,
        end_s: float,
        counts: dict[str, Arrivals],
        scored_s: float = float("inf"),
        scored: dict[str, Arrivals] | None = None,
    ) -> None:
        super().__init__(spec, seed, start)
        self.end_s = end_s
        self.counts = counts
        self.scored_s = scored_s
        self.scored = scored if scored is not None else {}
        """What arrived before `scored_s`: the requests the referee scores."""

    def window(self, t0: float, t1: float) -> list[Request]:
        if t0 >= self.end_s:
            return []
        out = super().window(t0, min(t1, self.end_s))
        self._count(out)
        return out

    def _count(self, out: list[Request]) -> None:
        for r in out:
            _add(self.counts.setdefault(r.target, Arrivals()), r)
            if r.arrival_s < self.scored_s:
                _add(self.scored.setdefault(r.target, Arrivals()), r)


def _add(a: Arrivals, r: Request) -> None:
    a.requests += r.count
    a.input_tokens += r.input_tokens * r.count
    a.output_tokens += r.output_tokens * r.count
    a.work_s += r.work_s * r.count


class JobTrace(Tally):
    """Render jobs replayed from a trace: (seconds since the first, GPU seconds), in order."""

    def __init__(
        self,
        target: str,
        jobs: tuple[tuple[float, float], ...],
        rate_scale: float,
        seed: int,
        *,
        end_s: float,
        counts: dict[str, Arrivals],
        scored_s: float = float("inf"),
        scored: dict[str, Arrivals] | None = None,
    ) -> None:
        # A render demand that draws nothing by itself: this class replays the rows.
        spec = RenderDemand(target=target, gpu_s_per_job=1.0, arrivals=PoissonArrivals(
            rate_per_min=0.0))  # fmt: skip
        super().__init__(
            spec,
            seed,
            datetime(2026, 1, 1),
            end_s=end_s,
            counts=counts,
            scored_s=scored_s,
            scored=scored,
        )
        self.target = target
        self.jobs = jobs
        self.rate_scale = rate_scale
        self.thin = random.Random(seed)

    def window(self, t0: float, t1: float) -> list[Request]:
        if t0 >= self.end_s:
            return []
        out: list[Request] = []
        while self.cursor < len(self.jobs) and self.jobs[self.cursor][0] < min(t1, self.end_s):
            at, gpu_s = self.jobs[self.cursor]
            self.cursor += 1
            copies = int(self.rate_scale)
            if self.thin.random() < self.rate_scale - copies:
                copies += 1
            out.extend(Request(max(at, t0), 0, 0, self.target, work_s=gpu_s)
                       for _ in range(copies))  # fmt: skip
        self._count(out)
        return out


@dataclass(slots=True)
class Meter:
    """Card-seconds held and busy, and joules, of the driven workloads' replicas."""

    workloads: tuple[str, ...]
    held_card_s: float = 0.0
    busy_card_s: float = 0.0
    joules: float = 0.0
    last_busy: dict[str, float] = field(default_factory=dict)

    def step(self, engine: Engine, dt: float) -> int:
        """Account for the `dt` seconds just run; returns the cards held now."""
        held = 0
        busy_now: dict[str, float] = {}
        last_busy = self.last_busy
        card_spec = engine.placer.card_spec
        for name in self.workloads:
            for r in engine.state.workloads[name].replicas:
                cards = r.cards
                if not cards:
                    continue
                n = len(cards)
                held += n
                client = r.client
                busy = busy_now[client] = engine.replica_busy_s(r)
                share = (busy - last_busy.get(client, busy)) / dt if dt > 0 else 0.0
                util = min(1.0, max(0.0, share)) if r.phase in ("ready", "terminating") else 0.0
                joules = self.joules
                for uuid in cards:
                    limit = card_spec[uuid].power_limit_w
                    idle = limit * IDLE_POWER_SHARE
                    joules += (idle + (limit - idle) * util) * dt
                self.joules = joules
                self.held_card_s += n * dt
                self.busy_card_s += n * util * dt
        self.last_busy = busy_now
        return held
