"""What kubectl and Helm users expect of a CLI: -h, shell completion, flags shown as flags,
output that is not cut at 80 columns when piped, and --version naming the commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent import __version__, provenance

ROOT = Path(__file__).resolve().parents[2]


def steward(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("STEWARD_", "COLUMNS"))}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**keep, **env},
    )


@pytest.mark.parametrize("args", [("-h",), ("run", "-h"), ("audit", "verify", "-h")])
def test_dash_h_is_help(args: tuple[str, ...]) -> None:
    done = steward(*args)
    assert done.returncode == 0, done.stderr
    assert "Usage: " in done.stdout and "--help" in done.stdout


def test_flags_show_no_value_type() -> None:
    done = steward("run", "-h")
    assert "--forever" in done.stdout and "--json" in done.stdout
    assert "<bool>" not in done.stdout


def test_shell_completion_is_offered() -> None:
    assert "--install-completion" in steward("-h").stdout
    done = steward("--show-completion", "bash")
    assert done.returncode == 0 and "_completion()" in done.stdout, done.stdout


def test_piped_output_is_not_wrapped() -> None:
    url = "http://prometheus.monitoring.svc.cluster.local:9090/" + "x" * 80
    done = steward("config", "show", STEWARD_METRICS__PROMETHEUS__URL=url)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "prometheus.monitoring" in x)
    assert line.strip() == f"url: {url}  # environment STEWARD_METRICS__PROMETHEUS__URL"


@pytest.mark.parametrize(
    ("args", "option", "help_ends"),
    [
        ((), "--show-completion", "to copy it or customize the installation."),
        (("run",), "--data-dir", "steward.yaml's data_dir, or ./.steward."),
        (("run",), "--kubeconfig", "$KUBECONFIG, ~/.kube/config."),
    ],
)
def test_piped_help_is_not_wrapped(args: tuple[str, ...], option: str, help_ends: str) -> None:
    done = steward(*args, "--help")  # stdout is a pipe here, as in `steward run --help | cat`
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.lstrip().startswith(option)]
    assert line.rstrip().endswith(help_ends), line  # the option's whole help on its own line
    assert len(line) > 80
    assert not {"╭", "│"} & set(done.stdout)  # plain text, no panel cut to a width


def test_help_takes_the_width_columns_gives() -> None:
    done = steward("run", "--help", COLUMNS="60")
    assert done.returncode == 0, done.stderr
    assert all(len(x) <= 60 for x in done.stdout.splitlines()), done.stdout
    assert "--data-dir" in done.stdout


def test_version_names_the_commit_of_a_checkout() -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    done = steward("--version")
    assert done.returncode == 0
    assert done.stdout.startswith(f"steward {__version__} (commit {head}")


def test_version_without_a_checkout_or_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provenance, "PACKAGE", tmp_path / "agent")
    monkeypatch.setattr(provenance, "COMMIT_FILE", tmp_path / "agent" / "COMMIT")
    provenance.commit.cache_clear()
    try:
        assert provenance.version_line() == f"steward {__version__}"
        (tmp_path / "agent").mkdir()
        (tmp_path / "agent" / "COMMIT").write_text("0123456789abcdef\n")
        provenance.commit.cache_clear()
        assert provenance.version_line() == f"steward {__version__} (commit 0123456789abcdef)"
    finally:
        provenance.commit.cache_clear()
