"""`steward status|plan --backend kubernetes` against the twin, and bad input at the command line:
one clear line naming the problem, exit 2, nothing changed in the cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lab.twin.server import Twin
from tests.kubernetes.conftest import create_stray_deployment, open_backend, versions

ROOT = Path(__file__).resolve().parents[2]


def steward(*args: str, env: dict[str, str], data: Path) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env, "KUBECONFIG": str(data / "absent")}
    return subprocess.run(
        [sys.executable, "-m", "agent.cli", *args, "--data-dir", str(data)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env=full,
    )


@pytest.mark.slow  # two processes that each load the official client (~10 s apiece here)
def test_status_and_plan_read_the_twin_and_change_nothing(twin: Twin, tmp_path: Path) -> None:
    env = {"STEWARD_KUBERNETES_SERVER": twin.url}
    before = versions(twin)
    status = steward("status", "--backend", "kubernetes", "--json", env=env, data=tmp_path)
    assert status.returncode == 0, status.stderr
    state = json.loads(status.stdout)
    assert state["source"] == "kubernetes"
    assert {w["name"] for w in state["workloads"]} >= {"beast", "tts", "render", "burst-llm"}
    plan = steward("plan", "--backend", "kubernetes", env=env, data=tmp_path)
    assert plan.returncode == 0, plan.stderr
    assert versions(twin) == before
    assert all("dryRun=All" in r.query for r in twin.requests if r.method != "GET")


def test_a_kubeconfig_that_does_not_parse_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "kubeconfig"
    bad.write_text("apiVersion: v1\nclusters: [\n")
    env = {"STEWARD_KUBERNETES_KUBECONFIG": str(bad)}
    out = steward("status", "--backend", "kubernetes", env=env, data=tmp_path)
    assert out.returncode == 2
    assert f"kubeconfig {bad}:3:1: does not parse as YAML" in out.stderr
    assert "Traceback" not in out.stderr


def test_an_unknown_context_exits_2(tmp_path: Path, twin: Twin) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        f"apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster: {{server: {twin.url}}}\n"
        "contexts:\n- name: t\n  context: {cluster: t, user: u}\ncurrent-context: t\n"
        "users:\n- name: u\n  user: {token: x}\n"
    )
    env = {"STEWARD_KUBERNETES_KUBECONFIG": str(config), "STEWARD_KUBERNETES_CONTEXT": "prod"}
    out = steward("status", "--backend", "kubernetes", env=env, data=tmp_path)
    assert out.returncode == 2
    assert "no context named 'prod' (known: t)" in out.stderr


@pytest.mark.slow
def test_a_workload_missing_its_pool_label_exits_2_and_nothing_changes(
    twin: Twin, tmp_path: Path
) -> None:
    b = open_backend(twin)
    try:
        create_stray_deployment(b)
    finally:
        b.close()
    before = versions(twin)
    env = {"STEWARD_KUBERNETES_SERVER": twin.url}
    out = steward("plan", "--backend", "kubernetes", env=env, data=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Deployment default/stray" in out.stderr and "steward.dev/pool" in out.stderr
    assert versions(twin) == before
