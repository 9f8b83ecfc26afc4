"""`steward config check` refuses an invalid PromQL override with its key and Prometheus's own
error, asking the real Prometheus the configuration names (a real process, a real server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from lab.bench.prometheus_server import RealPrometheus

ROOT = Path(__file__).parent.parent.parent


def _check(config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "config", "check", str(config)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_an_invalid_override_is_refused_and_a_valid_one_passes(tmp_path: Path) -> None:
    (tmp_path / "prom").mkdir()
    with RealPrometheus(tmp_path / "prom", ["127.0.0.1:9"]) as prometheus:
        bad = tmp_path / "bad.yaml"

        def config(waiting: str) -> str:
            prometheus_section = {"url": prometheus.url, "queries": {"waiting": waiting}}
            metrics = {"sources": ["prometheus"], "prometheus": prometheus_section}
            return yaml.safe_dump({"metrics": metrics})

        bad.write_text(config("sum by (pod) (vllm:num_requests_waiting"))
        refused = _check(bad)
        good = tmp_path / "good.yaml"
        good.write_text(config("sum by (pod) (vllm:num_requests_waiting)"))
        passed = _check(good)
    assert refused.returncode == 2, refused.stderr
    message = " ".join(refused.stderr.split())
    assert "metrics.prometheus.queries.waiting" in message
    assert "parse error" in message  # Prometheus's own words
    assert "Traceback" not in refused.stderr
    assert passed.returncode == 0, passed.stderr


def test_an_unknown_family_is_refused_where_it_is_written(tmp_path: Path) -> None:
    config = tmp_path / "steward.yaml"
    config.write_text("metrics:\n  prometheus:\n    queries:\n      wating: up\n")
    refused = _check(config)
    assert refused.returncode == 2
    message = " ".join(refused.stderr.split())
    assert "unknown metric family wating" in message and "waiting" in message
