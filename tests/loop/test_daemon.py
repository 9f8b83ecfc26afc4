"""The daemon as a user runs it: a real process with /healthz and /metrics, JSON logs on a pipe,
a clean stop on SIGTERM, and one writer per data dir."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agent.audit import AuditLog
from tests.loop.conftest import DATA

STEWARD = [sys.executable, "-m", "agent.cli"]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _wait_for(url: str, deadline_s: float = 60.0) -> tuple[int, str]:
    end = time.monotonic() + deadline_s
    while True:
        try:
            return _get(url)
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def test_daemon_serves_health_and_metrics_and_stops_cleanly(tmp_path: Path) -> None:
    data_dir, port = tmp_path / "d", _free_port()
    daemon = subprocess.Popen(
        [*STEWARD, "run", "--scenario", str(DATA / "spike.yaml"), "--interval", "5",
         "--speed", "20", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "STEWARD_TEST_CRASH_AT": ""},
    )  # fmt: skip
    try:
        code, body = _wait_for(f"http://127.0.0.1:{port}/healthz")
        deadline = time.monotonic() + 60
        while code != 200:  # not ready until the first tick has completed
            assert json.loads(body)["ready"] is False, body
            assert time.monotonic() < deadline, "no tick completed in a minute"
            time.sleep(0.2)
            code, body = _get(f"http://127.0.0.1:{port}/healthz")
        assert json.loads(body)["ok"] is True
        deadline = time.monotonic() + 60
        while "steward_actions_total{" not in _get(f"http://127.0.0.1:{port}/metrics")[1]:
            assert time.monotonic() < deadline, "no action in a minute"
            time.sleep(0.3)
        metrics = _get(f"http://127.0.0.1:{port}/metrics")[1]
        assert 'steward_decisions_total{verdict="allow"}' in metrics
        assert 'steward_actions_total{ok="true",type="place_replica"}' in metrics
        assert "steward_planner_seconds_bucket" in metrics
        assert "steward_audit_head{hash=" in metrics
        second = subprocess.run(
            [*STEWARD, "run", "--ticks", "1", "--data-dir", str(data_dir)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 2
        assert f"pid {daemon.pid}" in second.stderr
        daemon.send_signal(signal.SIGTERM)
        _out, err = daemon.communicate(timeout=60)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
    assert daemon.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert any(e["event"] == "decision" for e in events)
    assert any(e["event"] == "stopping" and e["signal"] == "SIGTERM" for e in events)
    log = AuditLog.open(data_dir, readonly=True)
    try:
        assert log.verify().ok
        assert log.unfinished_intents() == []
    finally:
        log.close()
