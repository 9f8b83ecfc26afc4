"""A kubeconfig that reaches the twin as one client, by the bearer token it sends."""

from __future__ import annotations

from pathlib import Path

from lab.twin.server import Twin


def kubeconfig_for(twin: Twin, token: str, path: Path, namespace: str = "default") -> Path:
    """A kubeconfig that reaches the twin as the client sending `token` (as a pod's service
    account token would): the twin maps it to a user (`twin.tokens`) and may cut it off."""
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: twin\n  cluster:\n    server: {twin.url}\n"
        f"contexts:\n- name: twin\n  context:\n    cluster: twin\n    user: u\n"
        f"    namespace: {namespace}\n"
        f"current-context: twin\nusers:\n- name: u\n  user:\n    token: {token}\n"
    )
    return path
