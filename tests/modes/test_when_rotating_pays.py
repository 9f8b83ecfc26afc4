"""When rotating pays (the seeds' rule): a cluster mode must win something two separate models
cannot — context beyond one node, one dominant stream's speed, a model no single node holds —
many parallel requests favour split, a model that is merely bigger is not enough, and neither a
short stay in the current mode nor a gain smaller than the switch's downtime moves the pair."""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from lab.sim.backend import SimCluster
from tools.model import ActiveMode, ClusterState, Metric, Mode
from tools.modes import Demand, Streams, demand_from_state, rotation_gain

HOUR = timedelta(hours=1)


@cache
def homelab() -> ClusterState:
    return SimCluster.homelab().observe()


def in_mode(name: str, for_s: float = 7200, extra: tuple[Mode, ...] = ()) -> ClusterState:
    """The homelab's observation with `name` active for `for_s` seconds."""
    base = homelab()
    since = base.observed_at - timedelta(seconds=for_s)
    return base.model_copy(
        update={"active_mode": ActiveMode(name=name, since=since), "modes": (*base.modes, *extra)}
    )


def flexible(count: float, context: int = 0) -> Demand:
    return Demand(streams=(Streams(count=count, context=context),))


def test_many_parallel_requests_favour_split() -> None:
    advice = rotation_gain(in_mode("cluster"), flexible(20))
    assert advice.rotate and advice.target == "split"
    assert advice.rates_tok_s == {"cluster": 95.5, "split": 170.0}
    assert "20 stream(s) run at 8.5 tok/s each instead of 4.8" in advice.reason


def test_one_dominant_stream_favours_cluster() -> None:
    advice = rotation_gain(in_mode("split"), flexible(1))
    assert advice.rotate and advice.target == "cluster"
    assert "1 stream(s) run at 40.9 tok/s each instead of 20.5" in advice.wins


def test_context_beyond_one_node_favours_cluster() -> None:
    demand = Demand(streams=(Streams(count=3, context=600_000), Streams(count=2)))
    advice = rotation_gain(in_mode("split"), demand)
    assert advice.rotate and advice.target == "cluster"
    assert "3 stream(s) need more than 262,144 tokens of context" in advice.wins


def test_a_model_only_the_cluster_runs_favours_cluster() -> None:
    demand = Demand(streams=(Streams(count=2, workload="beast"), Streams(count=2)))
    advice = rotation_gain(in_mode("split"), demand)
    assert advice.rotate and advice.target == "cluster"
    assert "2 stream(s) ask for a model only cluster runs" in advice.wins


def test_a_model_that_merely_fits_in_two_is_not_worth_a_cluster() -> None:
    hy3 = Mode(
        name="hy3",
        nodes=("gx10-a", "gx10-b"),
        workloads=("hy3",),
        aggregate_peak_tok_s=8.17,
        single_stream_tok_s=8.17,
        max_context=131_072,
    )
    advice = rotation_gain(in_mode("split", extra=(hy3,)), flexible(1))
    assert advice.target != "hy3"
    many = rotation_gain(in_mode("split", extra=(hy3,)), flexible(12))
    assert not many.rotate and "split serves this demand as well or better" in many.reason


def test_a_short_stay_holds_the_rotation() -> None:
    advice = rotation_gain(in_mode("cluster", for_s=600), flexible(20))
    assert not advice.rotate and advice.target == "split"
    assert advice.dwell_left_s == 1200
    assert "has run only 600 s of its minimum 1800 s" in advice.reason


def test_a_gain_smaller_than_the_downtime_does_not_pay() -> None:
    short = Demand(streams=(Streams(count=20),), horizon_s=400)
    advice = rotation_gain(in_mode("cluster"), short)
    assert not advice.rotate and "does not pay for the switch" in advice.reason
    assert advice.cost_tokens == round(95.5 * 300)


def test_no_demand_moves_nothing() -> None:
    advice = rotation_gain(in_mode("cluster"), Demand())
    assert not advice.rotate and "no demand" in advice.reason


def test_demand_is_read_from_the_observation() -> None:
    base = in_mode("cluster")
    at = base.observed_at
    workloads = tuple(
        w.model_copy(update={"queue_depth": Metric.fresh(4, at)})
        if w.name == "resident-b"
        else w.model_copy(update={"tokens_per_s": Metric.fresh(81.8, at)})
        if w.name == "beast"
        else w
        for w in base.workloads
    )
    demand = demand_from_state(base.model_copy(update={"workloads": workloads}))
    assert Streams(count=4.0, workload="resident-b") in demand.streams
    assert Streams(count=2.0) in demand.streams


streams = st.lists(
    st.builds(
        Streams,
        count=st.floats(min_value=0, max_value=200, allow_nan=False),
        context=st.sampled_from([0, 8_192, 131_072, 200_000, 600_000, 1_048_576]),
        workload=st.sampled_from([None, "beast", "resident-a", "resident-b"]),
    ),
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(streams=streams, horizon=st.floats(min_value=60, max_value=86_400))
def test_advice_never_flips_back_on_the_same_demand(streams: list[Streams], horizon: float) -> None:
    demand = Demand(streams=tuple(streams), horizon_s=horizon)
    for start in ("split", "cluster"):
        advice = rotation_gain(in_mode(start), demand)
        if advice.rotate:
            assert advice.target is not None and advice.wins
            back = rotation_gain(in_mode(advice.target), demand)
            assert not back.rotate, (advice, back)
        held = rotation_gain(in_mode(start, for_s=60), demand)
        assert not held.rotate
