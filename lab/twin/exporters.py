"""The twin's exporters: its simulated cards as a DCGM exporter and its serving engines as vLLM
(or SGLang, for a workload labelled `steward.dev/engine: sglang`), in the Prometheus text format,
for a real Prometheus to scrape.

`GET /twin/exporters/dcgm/metrics` answers every card as the DCGM exporter does
(`DCGM_FI_DEV_GPU_UTIL{gpu, UUID, device, modelName, Hostname}`, and the `pod`/`namespace`/
`container` of the workload it serves); `GET /twin/exporters/engines/metrics` answers one engine
per ready replica (lab.twin.engines), labelled with the replica's real pod name and
namespace (the labels a scrape through Kubernetes service discovery adds; one endpoint serves all
pods, so it writes them itself: scrape it with `honor_labels: true`), and the endpoint picker's
`inference_pool_average_queue_size`; `GET /twin/exporters/kueue/metrics` answers the jobs
waiting for each render or batch workload as Kueue's LocalQueue metric
(`kueue_local_queue_pending_workloads{name}`). tools.metrics.exposition and .engines write them.

Which clock dates a sample follows the twin's pace. A twin stepped by hand (speed 0, the system
tests) stamps every sample with its simulated time: only its own clock says when a reading was
taken, and that day lies months before the wall clock (Prometheus keeps such samples only with an
out-of-order window; docs/metrics.md). A twin paced by the wall clock (`steward twin --speed S`,
any S > 0) writes no sample times, as the real exporters: Prometheus dates each scrape itself,
keeps every sample with its defaults and marks a vanished pod's series stale at the next scrape.
Its counters advance by 1/S of each simulated second's count, so that `rate()` over Prometheus's
(wall) seconds is still per simulated second.
docs/metrics.md says how to point Prometheus at it.
"""

from __future__ import annotations

from datetime import datetime

from aiohttp import web

from lab.twin.engines import EngineExporter
from lab.twin.latencies import RequestLatencies
from lab.twin.parts import TwinParts
from lab.twin.pods import pod_names
from tools.metrics.exposition import CONTENT_TYPE, card_lines, queue_lines, render
from tools.model import ClusterState


class Exporters:
    """The twin's DCGM, engine and Kueue endpoints (see the module docstring)."""

    def __init__(self, twin: TwinParts) -> None:
        self.twin = twin
        self.stamped = twin.speed == 0
        """Each sample carries the simulated time (a twin stepped by hand, whose clock is not
        the wall clock's); False: none, and Prometheus stamps it at the scrape (a twin paced by
        the wall clock, at any speed). Stamped, a series that vanishes gets no staleness marker:
        Prometheus answers its last sample for its whole lookback (5 minutes), and a source
        dating an exporter's series by their oldest sample reads every card of it as stale 90 s
        after a pod went."""
        self.engines = EngineExporter(
            namespace=twin.namespace, epp=True, pods=self._pod, speed=twin.speed or 1.0
        )
        self._at: datetime | None = None
        self._state: ClusterState | None = None
        engine = twin.sim.engine
        self.latencies = {
            name: RequestLatencies()
            for name, spec in engine.specs.items()
            if spec.serving is not None and not spec.runs_jobs
        }
        """Every request's latencies per serving workload, fed by the simulator as they happen
        and observed into the engines' histograms at each update (one per request, as vLLM)."""
        engine.request_windows.update(self.latencies)

    def _pod(self, workload: str, index: int) -> str:
        spec = self.twin.sim.engine.specs.get(workload)
        return f"{workload}-{index}" if spec is None else pod_names(spec, index)[0]

    def observe(self) -> ClusterState:
        """The simulator's observation of now; the engines' counters advance once per instant."""
        now = self.twin.sim.now
        if self._state is None or now != self._at:
            state = self.twin.sim.observe()
            self.engines.update(state, {n: w.take() for n, w in self.latencies.items()})
            self._at, self._state = now, state
        return self._state

    def _stamp(self, state: ClusterState) -> datetime | None:
        return state.observed_at if self.stamped else None

    async def dcgm(self, _request: web.Request) -> web.Response:
        state = self.observe()
        body = render(card_lines(state, self.twin.namespace, self._pod), self._stamp(state))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def engines_text(self, _request: web.Request) -> web.Response:
        state = self.observe()
        body = render(self.engines.lines(), self._stamp(state))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def kueue(self, _request: web.Request) -> web.Response:
        state = self.observe()
        body = render(queue_lines(state, self.twin.namespace), self._stamp(state))
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/twin/exporters/dcgm/metrics", self.dcgm)
        app.router.add_get("/twin/exporters/engines/metrics", self.engines_text)
        app.router.add_get("/twin/exporters/kueue/metrics", self.kueue)
