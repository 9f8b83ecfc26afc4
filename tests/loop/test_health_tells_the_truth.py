"""/healthz is not ready until the first tick completes and while a tick overruns its bound;
/metrics exports the decision log's head; `--interval` must be finite and sane.

Before: `--interval inf` never finished a tick (and ignored SIGTERM), and /healthz said ok for a
daemon stuck in its first tick.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent.cli.app import app
from agent.daemon.runtime import Runtime
from agent.planners.rule_settings import RulesSettings
from agent.planners.rules import RulesPlanner
from agent.support.telemetry import Telemetry
from lab.sim.backend import SimCluster
from lab.sim.demand import PoissonDemand
from lab.sim.scenario import Scenario
from policies.loader import load_default_policy
from tools.actions import Plan
from tools.model import ClusterState

BUSY = Scenario(demand=(PoissonDemand(target="burst-llm", rate_per_min=30),))


class HeldPlanner:
    """The rules planner, held at its first plan until the test lets it go."""

    name = "held"

    def __init__(self, settings: RulesSettings) -> None:
        self.rules = RulesPlanner(settings)
        self.entered = threading.Event()
        self.release = threading.Event()

    def plan(self, state: ClusterState, signals: object) -> Plan:
        self.entered.set()
        self.release.wait(30)
        return self.rules.plan(state, signals)


def _get(url: str) -> tuple[int, dict[str, object] | str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = answer.read().decode()
            code = answer.status
    except urllib.error.HTTPError as err:
        body, code = err.read().decode(), err.code
    return code, json.loads(body) if body.startswith("{") else body


def test_healthz_is_not_ready_before_the_first_tick_nor_while_a_tick_overruns(
    data_dir: Path,
) -> None:
    policy = load_default_policy()
    planner = HeldPlanner(RulesSettings.from_policy(policy))
    telemetry = Telemetry()
    telemetry.min_tick_bound_s = 0.5
    sim = SimCluster.open(data_dir, BUSY)
    sim.advance(120)
    with Runtime.open(data_dir, sim, policy, planner=planner, telemetry=telemetry) as runtime:
        server = telemetry.serve(0)
        url = f"http://127.0.0.1:{server.server_port}"
        try:
            runtime.start()
            code, body = _get(f"{url}/healthz")
            assert code == 503 and isinstance(body, dict)
            assert body["ready"] is False and body["reason"] == "no tick has completed yet"

            telemetry.interval_s = 0.1
            ticking = threading.Thread(target=runtime.tick, args=(15.0,))
            ticking.start()
            assert planner.entered.wait(30)
            threading.Event().wait(0.7)  # past the 0.5 s bound
            code, body = _get(f"{url}/healthz")
            assert code == 503 and isinstance(body, dict)
            assert "over its bound of 0.5 s" in str(body["reason"])
            planner.release.set()
            ticking.join(30)

            telemetry.interval_s = 15.0
            code, body = _get(f"{url}/healthz")
            assert code == 200 and isinstance(body, dict) and body["ok"] is True

            head = runtime.ctx.audit.head()
            code, metrics = _get(f"{url}/metrics")
            assert head is not None and isinstance(metrics, str)
            assert f'steward_audit_head{{hash="{head[1]}"}} {float(head[0])}' in metrics
        finally:
            planner.release.set()
            server.shutdown()


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "86401", "0"])
def test_an_interval_that_is_not_finite_and_sane_is_bad_input(tmp_path: Path, value: str) -> None:
    result = CliRunner().invoke(
        app, ["run", "--interval", value, "--ticks", "1", "--data-dir", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "--interval" in result.output
    assert not (tmp_path / "audit.db").exists()  # refused before anything ran
