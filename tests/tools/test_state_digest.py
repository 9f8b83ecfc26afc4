"""`ClusterState.digest`: a hash of the observation's content, the same for the same content
however the state was built."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.policies.strategies import states
from tools.model import ClusterState, Metric


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(states())
def test_the_same_content_has_the_same_digest_however_it_was_built(state: ClusterState) -> None:
    parsed = ClusterState.model_validate_json(state.model_dump_json())
    assert state.digest() == parsed.digest()


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(states())
def test_a_changed_reading_changes_the_digest(state: ClusterState) -> None:
    one = state
    before = one.digest()
    node = next((n for n in one.nodes if n.gpus), None)
    if node is None:
        return
    card = node.gpus[0]
    reading = Metric.fresh((card.utilization.value or 0.0) + 1.0, state.observed_at, "dcgm")
    changed = node.model_copy(update={"gpus": (card.model_copy(update={"utilization": reading}),
                                               *node.gpus[1:])})  # fmt: skip
    nodes = tuple(changed if n.name == node.name else n for n in one.nodes)
    after = one.model_copy(update={"nodes": nodes})
    assert after.digest() != before
    assert one.digest() == before  # the unchanged state's digest is not disturbed
