"""`steward`: the real agent over the same simulated cluster, the code path of `steward run`.

A `Runtime` (LangGraph loop, rules planner, policy guard, audit log with fsync, checkpoints) in a
throw-away data dir, ticking every 15 s of simulated time (`steward run`'s default interval). Its
policy is the shipped one (policies/default.yaml on the homelab, policies/examples/fleet.yaml on a
fleet) with one change: the driven pools' SLO (`slo.<pool>.ttft_s`, and `queue_wait_s` as a
signal) is the benchmark's TTFT target — the one number a user states; nothing of Steward is
tuned to the trace.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import structlog

from agent.daemon.runtime import Runtime
from lab.bench.trace.base import Target, World
from lab.bench.trace.load import Timeline
from lab.sim.backend import SimCluster
from policies.loader import DEFAULT_POLICY, load_policy
from policies.model import Policy, SloTarget

FLEET_POLICY = DEFAULT_POLICY.parent / "examples" / "fleet.yaml"
INTERVAL_S = 15.0


def steward_policy(fleet: bool, pools: set[str], slo_s: float, itl_s: float = 0.1) -> Policy:
    policy = load_policy(FLEET_POLICY if fleet else DEFAULT_POLICY)
    slo = dict(policy.slo)
    for pool in pools:
        slo[pool] = SloTarget(queue_wait_s=slo_s, ttft_s=slo_s, itl_s=itl_s)
    return policy.model_copy(update={"slo": slo})


class Steward:
    name = "steward"
    interval_s = INTERVAL_S

    def __init__(self, sim: SimCluster, data_dir: Path, policy: Policy) -> None:
        # The agent's notices (findings appearing, fallbacks) go to stderr, errors only: stdout
        # carries the benchmark's JSON, and an hour of replay would bury it in notices.
        structlog.configure(
            wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
            logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        )
        self.runtime = Runtime.open(data_dir, sim, policy)
        self.runtime.start()

    def initial(self, target: Target, timeline: Timeline, jobs: bool) -> int | None:
        return None

    def decide(self, world: World) -> None:
        self.runtime.decide()

    def between(self) -> None:
        self.runtime.housekeep()

    def close(self) -> None:
        self.runtime.close()
