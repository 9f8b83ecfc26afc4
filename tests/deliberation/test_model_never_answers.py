"""Ten wall-clock minutes against an endpoint that accepts connections and never answers.

`steward run --speed 1 --port P --planner llm` on a homelab whose card is counted twice and whose
link runs at 11 % (two anomalies: questions for the model) while requests for burst-llm start a
minute in (a routine scale-up from zero). The model's deadline is the default for a local
endpoint, 240 s. Measured from outside, as an operator would: /healthz polled every half second
(200 throughout, and its tick count gives the tick times: no gap over twice the interval); the
decision log afterwards (the scale-up within two ticks of the first request, each deliberation a
fallback at its deadline).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from agent.audit import AuditLog, DeliberationRecord, Fallback, Intent

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

RUN_S = 600.0
INTERVAL_S = 15.0
DEMAND_AT_S = 60.0
SCENARIO = {
    "name": "anomalies-and-a-burst",
    "description": "ws-1's card counted twice, rail-1 at 11 %, burst-llm requests from 60 s",
    "profile": "homelab",
    "seed": 5,
    "start": "2026-03-02T01:00:00Z",
    "duration_s": 3600,
    "mode": "cluster",
    "demand": [
        {"kind": "poisson", "target": "gx10", "rate_per_min": 2},
        {
            "kind": "burst",
            "target": "burst-llm",
            "rate_per_min": 30,
            "at_s": DEMAND_AT_S,
            "duration_s": 3000,
            "input_tokens": 1500,
            "output_tokens": 300,
        },
    ],
    "faults": [
        {"kind": "mps_double_count", "node": "ws-1"},
        {"kind": "link_degraded", "link": "gx10-link", "path": "rail-1", "fraction": 0.11},
    ],
}


class BlackHole:
    """Accepts TCP connections on loopback and never sends a byte back."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        port: int = self.sock.getsockname()[1]
        return port

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _healthz(port: int) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_ten_minutes_against_a_model_that_never_answers(tmp_path: Path) -> None:
    hole = BlackHole()
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "OPENAI_"))}
    env |= {"STEWARD_LLM_BASE_URL": f"http://127.0.0.1:{hole.port}/v1",
            "STEWARD_LLM_MODEL": "never-answers"}  # fmt: skip
    data_dir = tmp_path / "d"
    command = [sys.executable, "-m", "agent.cli", "run", "--speed", "1", "--port", str(port),
               "--planner", "llm", "--interval", str(INTERVAL_S), "--scenario", str(scenario),
               "--forever", "--data-dir", str(data_dir)]  # fmt: skip
    log_path = tmp_path / "steward.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    statuses: list[int] = []
    tick_seen: list[float] = []  # wall time at which /healthz first showed each new tick
    last_ticks = 0
    try:
        started = time.monotonic()
        while time.monotonic() - started < 60:  # ready: its first tick done
            try:
                code, figures = _healthz(port)
            except OSError:
                time.sleep(0.2)
                continue
            if code == 200:
                break
            time.sleep(0.2)
        began = time.monotonic()
        while time.monotonic() - began < RUN_S:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            code, figures = _healthz(port)
            statuses.append(code)
            ticks = int(figures.get("ticks") or 0)  # type: ignore[call-overload]
            if ticks > last_ticks:
                tick_seen.append(time.monotonic())
                last_ticks = ticks
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        hole.close()
    gaps = [b - a for a, b in itertools.pairwise(tick_seen)]
    print(f"\n{len(statuses)} /healthz polls, {len(tick_seen)} ticks seen, longest gap "
          f"{max(gaps):.1f} s, {hole.accepted} connection(s) to the model")  # fmt: skip
    assert statuses and all(code == 200 for code in statuses), sorted(set(statuses))
    assert len(tick_seen) >= RUN_S / INTERVAL_S * 0.9
    assert max(gaps) <= 2 * INTERVAL_S
    assert hole.accepted >= 1, "the model was asked"

    log = AuditLog.open(data_dir, readonly=True)
    try:
        intents = [r.payload for r in log.records(kind="intent") if isinstance(r.payload, Intent)]
        asked = [
            r.payload
            for r in log.records(kind="deliberation")
            if isinstance(r.payload, DeliberationRecord)
        ]
        fallbacks = [r.payload for r in log.records(kind="fallback")]
    finally:
        log.close()
    scaled = [
        i
        for i in intents
        if any(p.action.target == "burst-llm" and p.verdict == "allow" for p in i.proposals)
    ]
    assert scaled, "burst-llm was scaled up"
    start = datetime.fromisoformat(str(SCENARIO["start"]).replace("Z", "+00:00"))
    first = (scaled[0].observed_at - start).total_seconds()
    assert first <= DEMAND_AT_S + 2 * INTERVAL_S, f"scale-up at {first:.0f} s"
    assert scaled[0].planner == "rules"
    # Each deliberation ended as a fallback at its 240 s deadline (two within ten minutes:
    # one at a time), and the log says the rules decided.
    assert len(asked) >= 2, asked
    for record in asked:
        assert record.outcome == "fallback", record
        assert "deadline of 240 s" in record.reason, record.reason
        assert 235 <= record.latency_s <= 260, record.latency_s
        assert record.judged_at is not None
        waited = (record.judged_at - record.asked_at).total_seconds()
        assert 240 <= waited <= 240 + 2 * INTERVAL_S + 10, waited
    assert {f.decision_id for f in fallbacks if isinstance(f, Fallback)} >= {
        r.decision_id for r in asked
    }
