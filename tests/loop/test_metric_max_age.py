"""steward.yaml's metrics.max_age_s: how old a reading may be before the loop calls it stale.

A fleet whose node metrics are scraped every five minutes reads stale most of the time under
the default 90 s (its pools held, a finding per node); an operator who knows the scrape
interval sets the key above it, from the file or the environment, and the loop follows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.audit import FindingChange
from agent.daemon.compose import assess_settings
from agent.daemon.config import ConfigError, load_config
from agent.daemon.runtime import Runtime
from lab.sim.backend import SimCluster
from lab.sim.scenario import FleetProfile, Scenario
from policies.loader import DEFAULT_POLICY, load_policy

SLOW_SCRAPE = Scenario(
    name="slow-scrape",
    profile=FleetProfile(nodes=12, gpus_per_node=2, node_scrape_interval_s=300.0),
    mode=None,
)


def test_the_key_is_read_from_the_file_and_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "steward.yaml"
    path.write_text("metrics:\n  max_age_s: 400\n")
    assert load_config(None, env={}).metrics.max_age_s == 90.0  # the default
    assert load_config(path, env={}).metrics.max_age_s == 400.0
    env = {"STEWARD_METRICS_MAX_AGE_S": "120"}
    assert load_config(path, env=env).metrics.max_age_s == 120.0
    assert assess_settings(load_config(path, env={})).metric_max_age_s == 400.0
    path.write_text("metrics:\n  max_age_s: 0\n")
    with pytest.raises(ConfigError, match=r":2:14: metrics.max_age_s: Input should be greater"):
        load_config(path, env={})


def _stale_nodes_after(data_dir: Path, max_age_s: float | None, ticks: int) -> set[str]:
    sim = SimCluster.open(data_dir, SLOW_SCRAPE)
    config = load_config(None, env={} if max_age_s is None else
                         {"STEWARD_METRICS_MAX_AGE_S": str(max_age_s)})  # fmt: skip
    runtime = Runtime.open(data_dir, sim, load_policy(DEFAULT_POLICY),
                           thresholds=assess_settings(config))  # fmt: skip
    try:
        runtime.start()
        for _ in range(ticks):
            runtime.tick(15.0)
        changes = [
            r.payload
            for r in runtime.ctx.audit.records(kind="finding")
            if isinstance(r.payload, FindingChange)
        ]
    finally:
        runtime.close()
    return {c.key for c in changes if c.status == "appeared" and c.finding == "stale_metrics"}


def test_the_loop_judges_staleness_by_the_configured_age(tmp_path: Path) -> None:
    stale = _stale_nodes_after(tmp_path / "default", None, ticks=12)
    assert any(key.startswith("stale_metrics:node-") for key in stale)
    assert _stale_nodes_after(tmp_path / "configured", 400.0, ticks=12) == set()
