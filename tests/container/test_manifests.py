"""The container and its manifests as shipped: they render, validate, lint, and say true things.

`kubectl kustomize docker/` must render offline; every object must validate against the
Kubernetes OpenAPI schema of a current release (kubernetes-validate, strict: no unknown fields);
the Dockerfile must lint clean (hadolint); the Grafana dashboard may only ask for metrics the
daemon exports; and the policy in the ConfigMap is the shipped default.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent.support.telemetry import Telemetry

ROOT = Path(__file__).resolve().parents[2]
DOCKER = ROOT / "docker"
BIN = Path(sys.executable).parent
KUBERNETES_RELEASE = "1.33.0"


def rendered() -> list[dict[str, object]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl is not installed (.ci/run installs it)")
    done = subprocess.run(
        [kubectl, "kustomize", str(DOCKER)], capture_output=True, text=True, check=True
    )
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def test_kustomize_renders_every_object() -> None:
    kinds = sorted(str(doc["kind"]) for doc in rendered())
    assert kinds == sorted(
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "Namespace",
            "PodDisruptionBudget",
            "Role",
            "Role",
            "RoleBinding",
            "RoleBinding",
            "Service",
            "Service",
            "ServiceAccount",
            "StatefulSet",
        ]
    )


def test_steward_lives_in_its_namespace_and_its_workloads_role_in_theirs() -> None:
    """The namespace transformer keeps the workloads' Role where steward.yaml says they are."""
    where = {(d["kind"], d["metadata"]["name"]): d["metadata"].get("namespace") for d in rendered()}
    assert where[("Role", "steward-workloads")] == where[("RoleBinding", "steward-workloads")]
    assert where[("Role", "steward-workloads")] == "default"  # config/steward.yaml's namespace
    assert where[("StatefulSet", "steward")] == where[("Role", "steward-leader")] == "steward"
    subjects = [s for d in rendered() for s in d.get("subjects") or ()]
    assert subjects and all(s["namespace"] == "steward" for s in subjects)


def test_every_object_validates_against_the_openapi_schema(tmp_path: Path) -> None:
    path = tmp_path / "rendered.yaml"
    path.write_text(yaml.safe_dump_all(rendered()))
    done = subprocess.run(
        [str(BIN / "kubernetes-validate"), "--strict", "-k", KUBERNETES_RELEASE, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("passed") == len(rendered())


def test_the_example_workloads_validate_and_carry_the_label_contract(tmp_path: Path) -> None:
    """docker/examples/ (a vLLM Deployment, a render job queue): what a real API server accepts,
    labelled as docs/kubernetes.md's contract says (the twin takes them in
    tests/kubernetes/test_deploy_path.py)."""
    docs = [
        d
        for path in sorted((DOCKER / "examples").glob("*.yaml"))
        for d in yaml.safe_load_all(path.read_text())
        if d
    ]
    path = tmp_path / "examples.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    done = subprocess.run(
        [str(BIN / "kubernetes-validate"), "--strict", "-k", KUBERNETES_RELEASE, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workloads = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    assert {d["metadata"]["name"] for d in workloads} == {"chat", "render-queue"}
    for d in workloads:
        labels = d["metadata"]["labels"]
        assert labels["steward.dev/managed"] == "true" and labels["steward.dev/pool"]
        template = d["spec"]["template"]
        assert template["metadata"]["labels"]["steward.dev/workload"] == d["metadata"]["name"]
        assert template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_the_deployment_is_hardened() -> None:
    (sts,) = [d for d in rendered() if d["kind"] == "StatefulSet"]
    spec = sts["spec"]
    assert isinstance(spec, dict)
    assert spec["replicas"] == 2
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert pod["affinity"]["podAntiAffinity"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["limits"]["memory"]
    secrets = [e for e in container["env"] if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]]
    assert {e["name"] for e in secrets} >= {"STEWARD_AUDIT_KEY", "SLACK_BOT_TOKEN"}
    assert all("value" not in e for e in secrets), "secret values never live in the manifests"
    assert not [d for d in rendered() if d["kind"] == "Secret"]


def test_the_dockerfile_lints_clean() -> None:
    done = subprocess.run(
        [str(BIN / "hadolint"), str(DOCKER / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _exported() -> set[str]:
    """Every sample name the daemon's /metrics can show."""
    names: set[str] = set()
    for family in Telemetry().registry.collect():
        names.add(family.name)
        kind = family.type
        if kind == "counter":
            names |= {f"{family.name}_total", f"{family.name}_created"}
        elif kind == "histogram":
            names |= {f"{family.name}_{s}" for s in ("bucket", "sum", "count", "created")}
    return names


def test_every_dashboard_query_names_an_exported_metric() -> None:
    dashboard = json.loads((DOCKER / "grafana-dashboard.json").read_text())
    exported = _exported()
    asked: set[str] = set()
    for panel in dashboard["panels"]:
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            asked |= set(re.findall(r"\bsteward_[a-z_]+", target["expr"]))
    assert asked, "the dashboard asks for nothing"
    assert asked <= exported, f"not exported: {sorted(asked - exported)}"
    titles = " ".join(p["title"].lower() for p in dashboard["panels"])
    for subject in ("verdict", "actions", "findings", "waiting", "latency", "fallbacks", "leader"):
        assert subject in titles


def test_the_configmap_policy_is_the_shipped_default() -> None:
    def body(path: Path) -> list[str]:
        lines = path.read_text().splitlines()
        return [line for line in lines if not line.startswith("#")]

    assert body(DOCKER / "config" / "policy.yaml") == body(ROOT / "policies" / "default.yaml")
