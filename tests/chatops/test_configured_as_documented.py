"""Slack as docs/slack.md configures it: `notifiers: [log, slack]` in steward.yaml starts chat-ops
with `steward run` and posts findings to the Web API (the stub on loopback speaks Slack's HTTP
API: no Slack can be reached from here); every configuration problem is reported at once; a
command is answered even when the Web API cannot be reached."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import structlog
from structlog.testing import capture_logs

from agent.support.notices import Notice
from tests.chatops.conftest import OWNER, Rig, sign, slash_body
from tests.chatops.slack_stub import BOT_TOKEN, CHANNEL, SIGNING_SECRET, SlackStub

ROOT = Path(__file__).resolve().parents[2]


def steward(
    tmp_path: Path, config: str, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "steward.yaml"
    path.write_text(config)
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "SLACK_"))}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "run", "--config", str(path), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**keep, "PYTHONPATH": str(ROOT), **env},
    )


def test_notifiers_log_and_slack_post_a_finding(tmp_path: Path, stub: SlackStub) -> None:
    config = f"""\
listen:
  port: {_free_port()}
notifiers: [log, slack]
slack:
  enabled: true
  mode: http
  channel: {CHANNEL}
  api_url: {stub.api_url}
  poll_s: 0.05
"""
    env = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET}
    done = steward(tmp_path, config, "--ticks", "120", "--speed", "0", "--json", env=env)
    assert done.returncode == 0, done.stderr
    posted = [c for c in stub.of("chat.postMessage") if "appeared" in c.params.get("text", "")]
    assert posted, [c.method for c in stub.calls]
    assert posted[0].params["channel"] == CHANNEL and posted[0].token == BOT_TOKEN
    assert "context_below_fit appeared" in posted[0].params["text"]
    assert '"finding appeared"' in done.stderr  # and the log has it, once
    assert "finding_appeared" not in done.stderr


def test_every_slack_problem_at_once(tmp_path: Path) -> None:
    config = "notifiers: [log, slack]\nslack:\n  enabled: true\n  mode: http\n"
    done = steward(tmp_path, config, "--ticks", "1", env={})
    assert done.returncode == 2
    for expected in (
        "slack http mode answers on the daemon's port",
        "needs SLACK_BOT_TOKEN",
        "needs SLACK_SIGNING_SECRET",
        "slack.channel is empty",
    ):
        assert expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_slack_as_notifier_needs_slack_enabled(tmp_path: Path) -> None:
    done = steward(tmp_path, "notifiers: [log, slack]\n", "--ticks", "1", env={})
    assert done.returncode == 2
    assert "notifiers lists slack but slack.enabled is false" in done.stderr


def _command(rig: Rig, text: str, response_url: str) -> tuple[int, str]:
    body = slash_body(text, OWNER).replace(
        "https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT0TEST%2F1%2Fabc",
        urllib.request.quote(response_url, safe=""),
    )
    request = urllib.request.Request(
        f"http://127.0.0.1:{rig.server.server_port}/slack/events",
        data=body.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded", **sign(body)},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status), response.read().decode()


def test_a_command_is_answered_while_the_web_api_is_unreachable(rig: Rig) -> None:
    gone = rig.stub.api_url
    rig.stub.stop()  # the Web API no longer answers: connections are refused
    rig.stub.wait_for(lambda: _refused(gone))
    with capture_logs() as logs:
        status, body = _command(rig, "status", gone + "response")
        assert (status, body) == (200, "")  # acknowledged at once, never a 500
        rig.stub.wait_for(lambda: any(e["event"].startswith("slack: cannot") for e in logs))
        # The sender learns that Slack is down; the next command is answered in its ack.
        rig.service.notifier.notify(
            Notice(kind="resumed", text="resumed", at=rig.runtime.parts.clock.now())
        )
        rig.stub.wait_for(lambda: not rig.service.sender.reachable())
        status, body = _command(rig, "status", gone + "response")
    assert status == 200
    answer = json.loads(body)
    assert answer["response_type"] == "ephemeral"
    assert "cannot post to this channel" in answer["text"]
    assert not [e for e in logs if "exc_info" in e or "exception" in e]
    structlog.reset_defaults()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url + "auth.test", timeout=1)
    except OSError:
        return True
    return False
