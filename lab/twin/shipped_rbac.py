"""The twin under the RBAC Steward's manifests ship (docker/k8s/rbac.yaml as `kubectl kustomize
docker/` renders it), with an admin beside it for a test's or a bench's own setup.

The manifests are read from a checkout of the repository (they are no part of the wheel), with
kubectl; without either, InvalidInput says so.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from lab.sim.backend import SimCluster
from lab.sim.day import default_day
from lab.twin.rbac import Rbac
from lab.twin.server import Twin
from tools.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[2]
STEWARD_NS = "steward"
SA = f"system:serviceaccount:{STEWARD_NS}:steward"
ADMIN = "kubernetes-admin"
ADMIN_RBAC: list[dict[str, Any]] = [
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "cluster-admin"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "cluster-admin"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "cluster-admin",
        },
        "subjects": [{"kind": "User", "name": ADMIN}],
    },
]
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def manifest_rbac() -> list[dict[str, Any]]:
    """The RBAC objects as `kubectl apply -k docker/` would create them (namespaces set)."""
    kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
    manifests = ROOT / "docker"
    if not (manifests / "kustomization.yaml").is_file() or not Path(kubectl).exists():
        raise InvalidInput(
            f"the shipped RBAC is read from a checkout's docker/ with kubectl: {manifests} "
            f"or {kubectl} is missing"
        )
    out = subprocess.run(
        [kubectl, "kustomize", str(manifests)], capture_output=True, text=True, check=True
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d and d.get("kind") in RBAC_KINDS]


def enforcing(tokens: dict[str, str], speed: float = 0.0) -> Twin:
    """The built-in day's twin under the manifests' RBAC (and an admin, for the setup)."""
    rbac = Rbac.of([*manifest_rbac(), *ADMIN_RBAC], STEWARD_NS)
    tokens = {**tokens, "admin": ADMIN}
    return Twin(SimCluster(default_day()), authorizer=rbac, tokens=tokens, speed=speed)
