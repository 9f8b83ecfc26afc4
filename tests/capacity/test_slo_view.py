"""assess's view of a profiled workload under a TTFT target: offered work from the engines'
counters, the reactive layer, and the words the plan and the log carry."""

from __future__ import annotations

from datetime import timedelta

from agent.signals.memory import SloMemory
from agent.signals.settings import AssessSettings
from agent.signals.slo import WARM_READINGS, slo_view
from lab.sim.backend import SimCluster
from tools.model import Metric, Workload

SETTINGS = AssessSettings(slo_ttft_s={"burst": 3.0}, slo_itl_s={"burst": 0.1})


def _burst(**readings: float) -> Workload:
    state = SimCluster.homelab(seed=0).observe()
    burst = state.workload("burst-llm")
    assert burst is not None and burst.serving_profile is not None
    at = state.observed_at
    fresh = {k: Metric.fresh(v, at, "gateway") for k, v in readings.items()}
    return burst.model_copy(update={"desired_replicas": 1, "ready_replicas": 1, **fresh})


def _fed(workload: Workload, ticks: int) -> tuple[object, SloMemory | None]:
    mem: SloMemory | None = None
    view = None
    for i in range(ticks):
        at = workload.queue_depth.observed_at
        assert at is not None
        now = at + timedelta(seconds=15 * i)
        moved = {
            k: Metric.fresh(getattr(workload, k).value, now, "gateway")
            for k in ("queue_depth", "tokens_per_s", "requests_running", "prompt_tokens_per_s",
                      "requests_per_s", "kv_cache_usage", "queue_wait_s")
            if getattr(workload, k).usable
        }  # fmt: skip
        view, mem = slo_view(workload.model_copy(update=moved), now, mem, SETTINGS)
    return view, mem


def test_offered_work_from_the_counters_sizes_the_workload_and_says_why() -> None:
    light = _burst(
        queue_depth=0, tokens_per_s=100, requests_running=4, prompt_tokens_per_s=400,
        requests_per_s=0.4,
    )  # fmt: skip
    heavy = _burst(
        queue_depth=0, tokens_per_s=900, requests_running=60, prompt_tokens_per_s=3000,
        requests_per_s=3.0,
    )  # fmt: skip
    small, _ = _fed(light, 10)
    big, _ = _fed(heavy, 10)
    assert small is not None and big is not None
    assert small.need == 1  # type: ignore[attr-defined]
    assert big.need >= 2  # type: ignore[attr-defined]
    assert "slots in flight" in big.words and "replicas by term" in big.words  # type: ignore[attr-defined]


def test_a_full_kv_cache_adds_replicas_at_once() -> None:
    full = _burst(
        queue_depth=0, tokens_per_s=100, requests_running=4, prompt_tokens_per_s=400,
        requests_per_s=0.4, kv_cache_usage=0.95,
    )  # fmt: skip
    view, _ = _fed(full, 2)
    assert view is not None
    assert "KV cache 95% used" in view.reactive  # type: ignore[attr-defined]
    assert view.need >= 2  # type: ignore[attr-defined]


def test_no_target_no_view() -> None:
    plain = _burst(queue_depth=0)
    at = plain.queue_depth.observed_at
    assert at is not None
    assert slo_view(plain, at, None, AssessSettings()) == (None, None)


def test_the_replicas_asked_do_not_depend_on_how_many_run_now() -> None:
    """The N/(N-1) check: with the prefill shared by the replicas the sizing asks for, the same
    readings ask for the same replicas at 1, 2 or 3 running, so a scale-down to what was asked
    is not undone by the sizing at one replica fewer."""
    readings = dict(
        queue_depth=0, tokens_per_s=400, requests_running=14, prompt_tokens_per_s=3000,
        requests_per_s=1.0,
    )  # fmt: skip
    asked = set()
    for running in (1, 2, 3):
        burst = _burst(**readings).model_copy(
            update={"desired_replicas": running, "ready_replicas": running}
        )
        view, _ = _fed(burst, 10)
        assert view is not None
        asked.add(view.need)  # type: ignore[attr-defined]
    assert len(asked) == 1 and asked.pop() >= 2


def test_a_noisy_prompt_rate_does_not_flip_the_sizing_tick_to_tick() -> None:
    """Prompt tokens/s of single scrapes swing (0 one scrape, thousands the next); the sizing
    plans for the short window's high of it, so the same alternation asks the same each tick."""
    mem: SloMemory | None = None
    base = _burst(
        queue_depth=0, tokens_per_s=150, requests_running=8, prompt_tokens_per_s=0,
        requests_per_s=0.5,
    )  # fmt: skip
    at = base.queue_depth.observed_at
    assert at is not None
    needs = []
    for i in range(24):
        now = at + timedelta(seconds=15 * i)
        prompts = 2400.0 if i % 2 else 0.0
        fresh = {
            "queue_depth": Metric.fresh(0, now, "gateway"),
            "tokens_per_s": Metric.fresh(150, now, "gateway"),
            "requests_running": Metric.fresh(8, now, "gateway"),
            "prompt_tokens_per_s": Metric.fresh(prompts, now, "gateway"),
            "requests_per_s": Metric.fresh(0.5, now, "gateway"),
        }
        view, mem = slo_view(base.model_copy(update=fresh), now, mem, SETTINGS)
        assert view is not None
        needs.append(view.need)
    assert len(set(needs[8:])) == 1, needs


def test_a_running_count_a_hair_below_zero_is_read_as_none_running() -> None:
    """The engines' running requests summed in floats may come back as -2e-13: the reactive
    layer reads nothing running, it does not fail the tick (found on a fleet replay)."""
    idle = _burst(queue_depth=0, tokens_per_s=0, requests_running=-2.04e-13)
    view, _ = _fed(idle, 2)
    assert view is not None
    assert view.reactive == ""  # type: ignore[attr-defined]


def test_the_forecasts_of_the_first_readings_are_not_scored() -> None:
    """The first readings climb from nothing (a counter's rate needs two scrapes): a forecast of
    that climb is no record of the load's surprises. Before the forecast is warm, nothing is
    scored; after, each fresh reading leaves a forecast to score one horizon ahead."""
    busy = _burst(
        queue_depth=0, tokens_per_s=900, requests_running=60, prompt_tokens_per_s=3000,
        requests_per_s=3.0,
    )  # fmt: skip
    _, early = _fed(busy, WARM_READINGS - 1)
    assert early is not None and early.misses.pending == () and early.misses.ratios == ()
    _, warm = _fed(busy, WARM_READINGS + 2)
    assert warm is not None and len(warm.misses.pending) == 3
