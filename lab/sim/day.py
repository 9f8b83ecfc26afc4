"""The built-in day: what `steward run` simulates when nothing is configured.

A homelab day compressed into two hours of simulated time, so that a newcomer sees the agent
decide within seconds. The workstation's TTS hums along all day. The render box starts with its
render replica up and idle: after the render pool's idle time (10 minutes in the default policy)
it goes to zero, and an inference burst borrows the freed cards (`burst-llm` back from zero).
At 0:40 renders queue while burst-llm is still busy: priority decides (pool.priority_preemption),
burst-llm gives the cards back and render comes back from zero. When the renders are done the
pool idles again, goes to zero, and a second, smaller inference burst borrows the cards once
more. Meanwhile the split-mode models are asked for while the pair runs in cluster mode, and a
rotation is proposed (it needs a human during working hours).
"""

from __future__ import annotations

from datetime import UTC, datetime

from lab.sim.demand import BurstArrivals, BurstDemand, PoissonDemand, RenderDemand
from lab.sim.scenario import Scenario

DAY = Scenario(
    name="homelab-day",
    description="A homelab day compressed into two hours (lab/sim/day.py)",
    seed=7,
    start=datetime(2026, 3, 2, 7, 0, tzinfo=UTC),
    duration_s=7200.0,
    mode="cluster",
    replicas={"render": 1, "burst-llm": 0, "tts": 1, "worker": 1},
    demand=(
        PoissonDemand(target="tts", rate_per_min=6, input_tokens=200, output_tokens=300),
        PoissonDemand(target="beast", rate_per_min=0.5, input_tokens=4000, output_tokens=400),
        BurstDemand(
            target="burst-llm",
            rate_per_min=40,
            at_s=300,
            duration_s=2700,
            input_tokens=1500,
            output_tokens=500,
        ),
        RenderDemand(
            target="render",
            gpu_s_per_job=90,
            arrivals=BurstArrivals(rate_per_min=1, at_s=2400, duration_s=600),
        ),
        BurstDemand(
            target="resident-b",
            rate_per_min=12,
            at_s=2700,
            duration_s=2400,
            input_tokens=3000,
            output_tokens=600,
        ),
        BurstDemand(
            target="burst-llm",
            rate_per_min=20,
            at_s=5400,
            duration_s=1500,
            input_tokens=1500,
            output_tokens=500,
        ),
    ),
)
"""The default scenario of `steward run` (see the module docstring)."""


def default_day() -> Scenario:
    return DAY
