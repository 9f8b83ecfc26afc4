"""`steward bench trace` as a user runs it: a real process, its JSON, its report, its errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {
    "slo_attainment", "slo_attainment_ci", "ttft_attainment", "itl_attainment", "gpu_hours",
    "gpu_hours_ci", "ratio_to_bound", "reversals", "scaling_actions", "seeds",
}  # fmt: skip
"""The issue's contract: every controller (and the bound) has at least these."""


def steward(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", "bench", "trace", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip


def _contract(doc: dict[str, object], names: list[str], seeds: int) -> None:
    assert list(doc)[:2] == ["controllers", "bound"]
    controllers = doc["controllers"]
    assert isinstance(controllers, dict)
    assert list(controllers) == names
    for figures in [*controllers.values(), doc["bound"]]:
        assert set(figures) >= FIELDS
        low, high = figures["slo_attainment_ci"]
        assert low <= figures["slo_attainment"] <= high
        assert figures["seeds"] == seeds


def test_json_has_the_contract_for_every_controller_and_the_bound(tmp_path: Path) -> None:
    done = steward("--trace", "sinusoid", "--duration", "0.05", "--controllers", "keda,static",
                   "--seeds", "2", "--rate-scale", "0.3", "--json",
                   "--report", str(tmp_path / "report"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    _contract(doc, ["keda", "static"], 2)
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Figures over" in report
    for png in ("attainment.png", "timeline-keda.png"):
        data = (tmp_path / "report" / png).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 10_000


@pytest.mark.slow
def test_the_issues_fleet_command_prints_the_contract() -> None:
    # The issue's command on its fleet, every controller, cut to a quarter hour and two seeds so
    # that CI can afford it; the whole hour and five seeds is `steward bench trace --trace
    # azure-conv --profile fleet:64x8 --seeds 5 --json` (docs/benchmarks.md).
    done = steward("--trace", "azure-conv", "--profile", "fleet:64x8", "--duration", "0.25",
                   "--seeds", "2", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    _contract(
        json.loads(done.stdout),
        ["steward", "static", "keda", "hpa", "dynamo", "rayserve", "aibrix"],
        2,
    )


@pytest.mark.slow
def test_a_csv_trace_by_path_on_a_small_fleet_prints_the_contract() -> None:
    csv = ROOT / "lab" / "traces" / "azure-2023-code.csv"
    done = steward("--trace", str(csv), "--profile", "fleet:16x8", "--seeds", "2",
                   "--duration", "0.25", "--controllers", "hpa,keda", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    _contract(json.loads(done.stdout), ["hpa", "keda"], 2)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--trace", "no-such-trace"), "neither a shipped trace"),
        (("--trace", "sinusoid", "--controllers", "keda,kubeflow"), "unknown kubeflow"),
        (("--trace", "sinusoid", "--profile", "fleet:many"), "homelab or fleet:NxM"),
        (("--trace", "sinusoid", "--duration", "0"), "must be > 0"),
        (("--trace", "sinusoid", "--seeds", "0"), "--seeds 0"),
        (("--trace", "sinusoid", "--jobs", "0"), "--jobs 0"),
        (("--trace", "servegen:m-huge"), "servegen[:SERVICE[:DAY]]"),
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


def test_the_agents_notices_stay_off_stdout() -> None:
    # Steward's runtime logs findings as it decides: the JSON on stdout must still parse.
    done = steward("--trace", "azure-code", "--duration", "0.05", "--rate-scale", "0.1",
                   "--controllers", "steward", "--seeds", "1", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout)["controllers"]) == ["steward"]
