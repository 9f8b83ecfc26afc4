"""`steward bench trace` as a user runs it: a real process, its JSON, its report, its errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "slo_attainment", "ttft_p50_s", "ttft_p99_s", "queue_wait_p99_s", "gpu_hours",
    "idle_gpu_hours", "energy_kwh", "scaling_actions", "reversals", "dropped", "aborted",
    "rejected", "from_zero_wait_p99_s", "median_ms", "p99_ms",
}  # fmt: skip


def steward(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "bench", "trace", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def test_json_has_one_entry_per_controller_with_every_figure(tmp_path: Path) -> None:
    done = steward("--trace", "sinusoid", "--duration", "0.1", "--controllers", "keda,oracle",
                   "--json", "--report", str(tmp_path / "report"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert list(doc) == ["controllers"]
    assert list(doc["controllers"]) == ["keda", "oracle"]
    for figures in doc["controllers"].values():
        assert set(figures) == FIELDS
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## The issue's margins" in report
    for png in ("timeline.png", "modes.png", "pareto.png"):
        data = (tmp_path / "report" / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--trace", "no-such-trace"), "neither a shipped trace"),
        (("--trace", "sinusoid", "--controllers", "keda,kubeflow"), "unknown kubeflow"),
        (("--trace", "sinusoid", "--profile", "fleet:many"), "homelab or fleet:NxM"),
        (("--trace", "sinusoid", "--duration", "0"), "must be > 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], words: str) -> None:
    done = steward(*args, timeout=120)
    assert done.returncode == 2
    assert words in done.stderr
    assert "Traceback" not in done.stderr


def test_a_job_trace_is_refused_on_a_fleet(tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("TIMESTAMP,GpuSeconds\n2023-11-16 18:00:00.000000,30\n")
    done = steward("--trace", str(jobs), "--profile", "fleet:8x8", timeout=120)
    assert done.returncode == 2
    assert "render job traces run on the homelab" in done.stderr


@pytest.mark.slow
def test_one_homelab_hour_for_all_controllers_within_five_minutes() -> None:
    started = time.monotonic()
    done = steward("--trace", "azure-conv", "--json")
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert set(doc["controllers"]) == {
        "steward", "static", "keda", "hpa", "dynamo", "rayserve", "aibrix", "oracle"
    }  # fmt: skip
    assert seconds <= 300, f"the one-hour replay of all controllers took {seconds:.0f} s"


def test_the_agents_notices_stay_off_stdout() -> None:
    # Steward's runtime logs findings as it decides: the JSON on stdout must still parse.
    done = steward("--trace", "azure-code", "--duration", "0.05", "--rate-scale", "0.1",
                   "--controllers", "steward", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["controllers"]) == ["steward"]
