"""Fairness of what controllers are told: every controller, Steward included, sees the profile's
declared speeds; only the serving runs at the hidden true ones (issue 33's perturbation)."""

from __future__ import annotations

from lab.bench.trace.base import Baseline, Entry, World, workload
from lab.bench.trace.replay import replay
from tests.bench.conftest import prepared
from tools.model import ServingProfile


class Watcher(Baseline):
    """Holds its replicas and records what the cluster tells a controller about them."""

    name = "watcher"

    def __init__(self) -> None:
        self.profiles: list[ServingProfile | None] = []
        self.rated: list[float | None] = []
        self.probed: list[float | None] = []

    def decide(self, world: World) -> None:
        state = world.cluster.observe()
        for t in world.targets:
            w = workload(state, t.name)
            self.profiles.append(w.serving_profile)
            self.rated.append(w.rated_tok_s)
            self.probed.append(world.cluster.probe(t.name).tokens_per_s)


def test_the_snapshot_states_the_declared_profile_and_the_serving_runs_at_the_true_speed() -> None:
    prep = prepared("sinusoid", 120, rate_scale=0.05, seed=4)
    (target,) = prep.targets
    factor = prep.capacity[target.name]
    assert abs(factor - 1.0) > 0.01  # this seed hides a real difference
    declared = prep.profile.workload(target.name)
    assert declared is not None and declared.serving is not None
    watcher = Watcher()
    replay(prep, Entry("watcher", "", lambda sim, d: watcher, watcher.initial))
    assert watcher.profiles and all(p is not None for p in watcher.profiles)
    assert {p.prefill_tok_s for p in watcher.profiles if p} == {declared.serving.prefill_tok_s}
    assert set(watcher.rated) == {declared.serving.aggregate_peak_tok_s}
    # A probe is a real request: it measures the true speed, as it would on real cards.
    true_single = declared.serving.single_stream_tok_s * factor
    assert {round(x or 0.0, 1) for x in watcher.probed} == {round(true_single, 1)}
