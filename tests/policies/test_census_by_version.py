"""The engine's verdicts when the workloads' sums are reused by version are those without reuse.

policies.rules.census keeps what an observation's workloads add up to (cards and ready replicas
per pool, the worst queue wait, the replicas on each node) while the next observation's workloads
are the same names at the same versions (and only the worst queue wait, when only a metric
source's readings changed). Over random successive observations — parsed afresh from JSON, with
random workloads changed (a new version) or their readings alone (a new readings version) in
between — every judgement
equals the one on the same state with every workload version unknown, where nothing is reused.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policies.engine import judge
from policies.rules import census as census_module
from policies.rules.census import census
from tests.policies.builders import homelab
from tests.policies.strategies import T0, scenario
from tools.bases import new_version
from tools.model import ClusterState, Metric, Workload

CHANGES = st.lists(
    st.tuples(
        st.integers(0, 20),
        st.integers(0, 4),
        st.integers(0, 4),
        st.sampled_from(
            [Metric.fresh(1.0, T0, "v"), Metric.fresh(60.0, T0, "v"), Metric.missing()]
        ),
        st.booleans(),
    ),
    max_size=4,
)


def _with_workloads(state: ClusterState, workloads: tuple[Workload, ...]) -> ClusterState:
    fields = {name: getattr(state, name) for name in ClusterState.model_fields}
    return ClusterState.model_validate({**fields, "workloads": workloads})


def _parsed(state: ClusterState) -> ClusterState:
    return ClusterState.model_validate_json(state.model_dump_json())


def _changed(w: Workload, desired: int, ready: int, wait: Metric, readings: bool) -> Workload:
    """`w` changed by its producer (a new version), or only its readings by a metric source
    (the producer's version kept, a new readings version)."""
    if readings:
        return w.model_copy(
            update={"queue_wait_s": wait, "version": w.version, "readings_version": new_version()}
        )
    update = {"desired_replicas": desired, "ready_replicas": min(ready, desired)}
    return w.model_copy(update={**update, "queue_wait_s": wait, "version": new_version()})


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario(), st.lists(CHANGES, min_size=1, max_size=3))
def test_reused_sums_judge_as_with_no_reuse(
    case: dict[str, Any], steps: list[list[tuple[int, int, int, Metric, bool]]]
) -> None:
    policy, history, now = case["policy"], case["history"], case["now"]
    start = case["state"]
    versioned = tuple(w.model_copy(update={"version": new_version()}) for w in start.workloads)
    state = _parsed(_with_workloads(start, versioned))
    for step in steps:
        workloads = list(state.workloads)
        for at, desired, ready, wait, readings in step:
            if workloads:
                i = at % len(workloads)
                workloads[i] = _changed(workloads[i], desired, ready, wait, readings)
        state = _parsed(_with_workloads(state, tuple(workloads)))
        unknown = tuple(
            w.model_copy(update={"version": "", "readings_version": ""}) for w in state.workloads
        )
        reference = _with_workloads(state, unknown)
        for plan in case["plans"][:3]:
            with (  # nothing reused, nothing kept
                patch.object(census_module, "_last", None),
                patch.object(census_module, "_last_shape", None),
            ):
                expected = judge(plan, reference, policy, history, now)
            assert judge(plan, state, policy, history, now) == expected


def test_a_census_is_reused_only_for_the_same_names_at_the_same_versions() -> None:
    w = Workload(name="a", kind="inference", pool="p", desired_replicas=2, ready_replicas=2)
    first = (w.model_copy(update={"version": "v-a1"}),)
    assert census(first) is census(tuple(_parsed_workload(x) for x in first))
    moved = (_changed(first[0], 3, 3, Metric.missing(), readings=False),)
    assert census(moved).pool_cards == {"p": 3}
    waiting = (_changed(moved[0], 3, 3, Metric.fresh(9.0, T0, "prometheus"), readings=True),)
    again = census(waiting)
    assert again.on_node is census(moved).on_node  # the sums kept, the reading counted
    assert again.worst_queue_wait == {"p": 9.0}
    unknown = (w.model_copy(update={"version": ""}),)
    assert census(unknown) is not census(unknown)


def _parsed_workload(w: Workload) -> Workload:
    return Workload.model_validate_json(w.model_dump_json())


def test_new_readings_under_the_same_version_are_counted_again() -> None:
    """A metric source keeps a workload's version and sets its readings_version: the worst
    queue wait must come from the new readings, not from the census of the last ones."""
    state = homelab()
    base = tuple(w.model_copy(update={"version": new_version()}) for w in state.workloads)
    first = base[0]
    waits = []
    for wait in (1.0, 60.0):
        merged = first.model_copy(
            update={
                "queue_wait_s": Metric.fresh(wait, T0, "prometheus"),
                "version": first.version,
                "readings_version": new_version(),
            }
        )
        waits.append(census((merged, *base[1:])).worst_queue_wait[first.pool])
    assert waits[1] >= 60.0 and waits[0] < 60.0
