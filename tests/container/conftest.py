"""The image the container tests share: built once per session with Debian's podman (a build
takes minutes here), then run (test_image.py) and pushed to a registry (test_registry.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "container"
IMAGE = "localhost/steward:test"


@dataclass(frozen=True)
class Built:
    """The image built from docker/Dockerfile, and the environment podman needs here."""

    name: str
    env: dict[str, str]


@pytest.fixture(scope="session")
def built_image() -> Built:
    """`scripts/container build` (the base made from Debian's archive: no registry is
    reachable here to pull `python:…-slim` from)."""
    if shutil.which("podman") is None:
        pytest.fail("podman is not installed (.ci/run installs it)")
    env = {**os.environ, "STEWARD_IMAGE": IMAGE}
    built = subprocess.run(
        [str(SCRIPT), "build"], env=env, capture_output=True, text=True, timeout=1500, check=False
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    conf = subprocess.run(
        [str(SCRIPT), "conf"], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Built(IMAGE, {**env, "CONTAINERS_CONF": conf})
