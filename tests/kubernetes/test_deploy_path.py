"""docs/kubernetes.md's deploy sequence, run as an operator runs it, against the twin: the
kustomization with the image and namespace set as the docs say, rendered and applied by the real
kubectl; the Secret made from files; the example workloads (a vLLM Deployment and a render job
queue) applied beside them; then `steward plan --kubeconfig F --context C` — no steward.yaml, no
environment — finds those workloads by their labels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.kubernetes.conftest import KUBECTL
from tests.kubernetes.test_run_prometheus_process import first_line, steward

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
IMAGE = ("registry.example.com/team/steward", "0.1.0-rc1")
NAMESPACE = "gpu-ops"
ENV = {k: v for k, v in os.environ.items() if not k.startswith("STEWARD_") and k != "KUBECONFIG"}


def run(*argv: str, stdin: str | None = None, cwd: Path = ROOT) -> str:
    done = subprocess.run(
        list(argv),
        input=stdin,
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(argv)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def configured_copy(where: Path) -> Path:
    """docker/ with the image and Steward's namespace set where docs/kubernetes.md says."""
    copy = where / "docker"
    shutil.copytree(ROOT / "docker", copy)
    kustomization = copy / "kustomization.yaml"
    doc = yaml.safe_load(kustomization.read_text())
    (entry,) = doc["images"]
    entry["newName"], entry["newTag"] = IMAGE
    kustomization.write_text(yaml.safe_dump(doc, sort_keys=False))
    transformer = copy / "namespace-transformer.yaml"
    doc = yaml.safe_load(transformer.read_text())
    doc["metadata"]["namespace"] = NAMESPACE
    transformer.write_text(yaml.safe_dump(doc, sort_keys=False))
    return copy


def test_the_rendered_manifests_and_examples_apply_and_plan_finds_the_workloads(
    tmp_path: Path,
) -> None:
    docker = configured_copy(tmp_path)
    objects = [d for d in yaml.safe_load_all(run(KUBECTL, "kustomize", str(docker))) if d]
    where = {(d["kind"], d["metadata"]["name"]): d["metadata"].get("namespace") for d in objects}
    assert ("Namespace", NAMESPACE) in where
    assert where[("StatefulSet", "steward")] == where[("ServiceAccount", "steward")] == NAMESPACE
    assert where[("Role", "steward-workloads")] == "default"  # the workloads' namespace
    (sts,) = [d for d in objects if d["kind"] == "StatefulSet"]
    assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == ":".join(IMAGE)

    with steward(
        ["twin", "--speed", "0", "--data-dir", str(tmp_path / "twin")],
        tmp_path / "twin.log",
        stdout=subprocess.PIPE,
    ) as twin:
        first_line(twin, tmp_path / "twin.log")
        kubeconfig = str(tmp_path / "twin" / "twin.kubeconfig")
        kubectl = (KUBECTL, "--kubeconfig", kubeconfig)
        # As docs/kubernetes.md orders it: the namespace and the Secret (from a file) first,
        # rendered by kubectl and applied; then the kustomization. The twin serves no OpenAPI
        # documents: --validate=false (a real cluster validates).
        namespace = run(*kubectl, "create", "namespace", NAMESPACE, "--dry-run=client", "-o",
                        "yaml")  # fmt: skip
        run(*kubectl, "apply", "-f", "-", "--validate=false", stdin=namespace)
        key = tmp_path / "audit-hmac-key"
        key.write_text("a-long-random-key\n")
        secret = run(
            *kubectl,
            "-n",
            NAMESPACE,
            "create",
            "secret",
            "generic",
            "steward-secrets",
            f"--from-file=audit-hmac-key={key}",
            "--dry-run=client",
            "-o",
            "yaml",
        )
        run(*kubectl, "apply", "-f", "-", "--validate=false", stdin=secret)
        stored = json.loads(run(*kubectl, "-n", NAMESPACE, "get", "secret", "steward-secrets",
                                "-o", "json"))  # fmt: skip
        assert set(stored["data"]) == {"audit-hmac-key"}
        applied = run(*kubectl, "apply", "-k", str(docker), "--validate=false")
        assert f"namespace/{NAMESPACE}" in applied
        assert "statefulset.apps/steward created" in applied
        sts = json.loads(run(*kubectl, "-n", NAMESPACE, "get", "statefulset", "steward", "-o",
                             "json"))  # fmt: skip
        assert sts["spec"]["template"]["spec"]["containers"][0]["image"] == ":".join(IMAGE)
        examples = run(*kubectl, "apply", "-f", str(ROOT / "docker" / "examples"),
                       "--validate=false")  # fmt: skip
        assert "deployment.apps/chat created" in examples
        assert "statefulset.apps/render-queue created" in examples

        planned = subprocess.run(
            [sys.executable, "-m", "agent.cli", "plan", "--kubeconfig", kubeconfig,
             "--context", "steward-twin", "--data-dir", str(tmp_path / "state")],
            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert planned.returncode == 0, planned.stdout + planned.stderr
        assert "Traceback" not in planned.stderr, planned.stderr
        (found,) = [line for line in planned.stdout.splitlines() if "workload(s) labelled" in line]
        assert "chat (burst)" in found and "render-queue (render)" in found, found

        # `--context` names the kubeconfig's context on every command, `fit --node` included
        # (its context length is --context-length).
        nodes = json.loads(run(*kubectl, "get", "nodes", "-o", "json"))["items"]
        node = nodes[0]["metadata"]["name"]
        fitted = subprocess.run(
            [sys.executable, "-m", "agent.cli", "fit", "--model", "qwen3-32b",
             "--context-length", "8192", "--node", node, "--kubeconfig", kubeconfig,
             "--context", "steward-twin", "--data-dir", str(tmp_path / "state"), "--json"],
            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert fitted.returncode in (0, 1) and fitted.stdout.startswith("{"), fitted.stderr
        assert json.loads(fitted.stdout)["host"] == node
        assert "warning" not in fitted.stderr, fitted.stderr  # the new spelling: no deprecation
