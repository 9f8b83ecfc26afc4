"""History: executed actions by time and target, and when each pool was last seen busy."""

from __future__ import annotations

from datetime import timedelta

from policies.history import History
from tests.policies.builders import NIGHT, default_policy, homelab, replace
from tools.actions import CordonNode, NoOp, ScaleWorkload


def test_record_keeps_actions_but_not_noops() -> None:
    history = History().record(NoOp(reason="idle"), NIGHT).record(CordonNode(node="a"), NIGHT)
    assert len(history.executed) == 1
    assert history.executed[0].key == "node:a"


def test_count_since_and_last_on() -> None:
    history = History()
    for minutes in (90, 50, 10):
        action = ScaleWorkload(workload="render", replicas=minutes % 3)
        history = history.record(action, NIGHT - timedelta(minutes=minutes))
    assert history.count_since(NIGHT - timedelta(hours=1)) == 2
    last = history.last_on("workload:render", "scale_workload")
    assert last is not None and last.at == NIGHT - timedelta(minutes=10)
    assert history.last_on("workload:render", "place_replica") is None
    assert history.last_on("node:x") is None


def test_idle_since_needs_watching() -> None:
    policy = default_policy()
    assert History().idle_since("render") is None
    idle = homelab(render_util=0.0)
    history = History().observed(replace(idle, observed_at=NIGHT - timedelta(minutes=20)), policy)
    assert history.idle_since("render") == NIGHT - timedelta(minutes=20)


def test_a_busy_observation_restarts_the_idle_clock() -> None:
    policy = default_policy()
    busy = homelab(render_util=70.0)
    history = History().observed(replace(busy, observed_at=NIGHT - timedelta(minutes=20)), policy)
    history = history.observed(replace(busy, observed_at=NIGHT - timedelta(minutes=5)), policy)
    history = history.observed(homelab(render_util=0.0), policy)
    assert history.idle_since("render") == NIGHT - timedelta(minutes=5)
    # gx10 (utilization 70 %) is busy at every observation
    assert history.idle_since("gx10") == NIGHT


def test_naive_times_are_taken_as_utc() -> None:
    from datetime import datetime

    from tests.policies.builders import run

    naive = datetime(2026, 3, 2, 1, 59)  # one minute before NIGHT, without a zone
    history = History().record(ScaleWorkload(workload="worker", replicas=1), naive)
    assert history.executed[0].at == NIGHT - timedelta(minutes=1)
    verdict = run(ScaleWorkload(workload="worker", replicas=0), history=history,
                  now=NIGHT.replace(tzinfo=None)).verdicts[0]  # fmt: skip
    assert verdict.rule_ids == ("cooldown.scale_workload",)
