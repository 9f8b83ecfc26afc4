"""Every request's latencies, as a serving engine observes them into its histograms.

vLLM observes one value per request into `time_to_first_token_seconds`,
`request_queue_time_seconds`, `inter_token_latency_seconds` and
`e2e_request_latency_seconds`; a histogram's `_count` is then
the requests it saw, and `histogram_quantile()` over it gives back their distribution. The twin
does the same: a `RequestLatencies` window per serving workload is registered with the
simulator's engine (`Engine.request_windows`), which hands it each request's events as they
happen; the engine exporters (lab.twin.engines) take what arrived since their last update and
observe each value into the histograms of the workload's ready pods.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lab.sim.serving import Window


@dataclass(frozen=True, slots=True)
class Observed:
    """(seconds, requests) of the events since the last `take`."""

    ttft: list[tuple[float, float]]
    queue_time: list[tuple[float, float]]
    itl: list[tuple[float, float]]
    """Mean inter-token latency of each finished request with more than one output token."""
    e2e: list[tuple[float, float]]
    """Each finished request's time from arrival to its last token."""


@dataclass(slots=True)
class RequestLatencies(Window):
    """A window that keeps each request's TTFT, queue wait and mean ITL until they are taken."""

    taken: Observed = field(default_factory=lambda: Observed([], [], [], []))

    def admitted(self, wait_s: float, arrival_s: float, count: float) -> None:
        self.taken.queue_time.append((wait_s, count))

    def first_token(self, ttft_s: float, arrival_s: float, count: float) -> None:
        self.taken.ttft.append((ttft_s, count))

    def finished(
        self, arrival_s: float, ttft_s: float, itl_s: float | None, output_tokens: int, count: float
    ) -> None:
        if itl_s is not None:
            self.taken.itl.append((itl_s, count))
        # Its mean gap is (last token - first) / (output tokens - 1): the last token is then
        # this far after the arrival.
        e2e = ttft_s + (itl_s * (output_tokens - 1) if itl_s is not None else 0.0)
        self.taken.e2e.append((e2e, count))

    def take(self) -> Observed:
        """The events since the last call, forgotten here (the engine never resets this window:
        its token and prompt sums are not read)."""
        out = self.taken
        self.taken = Observed([], [], [], [])
        self.reset()
        return out
