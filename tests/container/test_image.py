"""The image as users run it: built with Debian's podman from a locally made base, run as a
non-root user on a read-only root filesystem, answering /healthz and /metrics on a published
port, and stopping on SIGTERM within 10 seconds.

No container registry is reachable here, so the base (`python:…-slim` for users) is made from
Debian's archive by scripts/container; the Dockerfile takes it as a build argument, unchanged.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.request

import pytest

from tests.container.conftest import Built

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return int(answer.status), answer.read().decode()


def test_the_image_builds_runs_as_non_root_and_stops_on_sigterm(built_image: Built) -> None:
    env, image = built_image.env, built_image.name
    port = _free_port()
    name = f"steward-test-{port}"
    started = subprocess.run(
        ["podman", "run", "-d", "--rm", "--name", name, "--read-only",
         "-v", f"{name}:/data", "-p", f"127.0.0.1:{port}:9108", image],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    try:
        user = subprocess.run(
            ["podman", "exec", name, "id", "-u"], env=env, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        assert user.stdout.strip() == "10001", user.stdout + user.stderr
        deadline = time.monotonic() + 120
        status, body = 0, ""
        while time.monotonic() < deadline:
            try:
                status, body = _get(f"http://127.0.0.1:{port}/healthz")
                if status == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        assert status == 200, body
        status, metrics = _get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert "# TYPE steward_ticks_total counter" in metrics
        assert re.search(r'^steward_leader\{identity="[^"]+"\} 1\.0$', metrics, re.M), metrics
        began = time.monotonic()
        stopped = subprocess.run(
            ["podman", "stop", "-t", "10", name], env=env, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        took = time.monotonic() - began
        assert stopped.returncode == 0, stopped.stderr
        assert took < 10, f"SIGTERM took {took:.1f} s to stop the agent (podman then kills it)"
    finally:
        subprocess.run(["podman", "rm", "-f", name], env=env, capture_output=True, check=False)
        subprocess.run(
            ["podman", "volume", "rm", "-f", name], env=env, capture_output=True, check=False
        )
