"""Bad input is named, and nothing in the cluster changes: a kubeconfig that does not parse,
an unknown context, a managed workload without its pool label."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.twin.server import Twin
from tests.kubernetes.conftest import create_stray_deployment, open_backend, versions
from tools.backends.kubernetes.backend import KubernetesCluster
from tools.backends.kubernetes.connect import configuration
from tools.backends.kubernetes.settings import KubernetesSettings
from tools.errors import InvalidInput

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: twin
  cluster: {{server: "{url}"}}
contexts:
- name: twin
  context: {{cluster: twin, user: me}}
current-context: twin
users:
- name: me
  user: {{token: t}}
"""


def test_a_kubeconfig_that_does_not_parse_is_named_with_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("apiVersion: v1\nclusters: [\n  - name: x\n  cluster: {\n")
    with pytest.raises(InvalidInput, match=rf"kubeconfig {bad}:\d+:\d+: does not parse as YAML"):
        configuration(KubernetesSettings(kubeconfig=bad, in_cluster=False))


def test_an_unknown_context_lists_the_known_ones(tmp_path: Path, twin: Twin) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG.format(url=twin.url))
    with pytest.raises(InvalidInput, match=r"no context named 'prod' \(known: twin\)"):
        configuration(KubernetesSettings(kubeconfig=path, context="prod", in_cluster=False))
    cfg = configuration(KubernetesSettings(kubeconfig=path, context="twin", in_cluster=False))
    assert cfg.host == twin.url


def test_kubeconfig_from_the_environment_as_kubectl_finds_it(
    tmp_path: Path, twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "config"
    path.write_text(KUBECONFIG.format(url=twin.url))
    monkeypatch.setenv("KUBECONFIG", str(path))
    b = KubernetesCluster(KubernetesSettings(in_cluster=False))
    try:
        assert {n.name for n in b.observe().nodes} == {"gx10-a", "gx10-b", "ws-1", "render-1"}
    finally:
        b.close()


def test_no_kubeconfig_at_all_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(InvalidInput, match="no kubeconfig found"):
        configuration(KubernetesSettings(in_cluster=False))


def test_a_managed_workload_without_a_pool_is_named(twin: Twin) -> None:
    b = open_backend(twin)
    try:
        create_stray_deployment(b)
        b.caches["deployments"].wait_rv(int(twin.store.rv), 2.0)
        before = versions(twin)
        with pytest.raises(InvalidInput, match=r"Deployment default/stray: .* no steward.dev/pool"):
            b.observe()
        assert versions(twin) == before
    finally:
        b.close()


def test_settings_reject_unknown_keys() -> None:
    with pytest.raises(ValueError, match="namespce"):
        KubernetesSettings.model_validate({"namespce": "gpu"})


@pytest.mark.parametrize(
    ("election", "said"),
    [
        (
            "lease_duration_s: 3\n    renew_deadline_s: 5",
            "renew_deadline_s: must be below lease_duration_s (3)",
        ),
        ("retry_period_s: 12", "retry_period_s: must be below renew_deadline_s (10)"),
        ("lease_duration_s: 1", "lease_duration_s: Input should be greater than or equal to 2"),
    ],
)
def test_a_broken_lease_setting_is_one_line_naming_its_place(
    tmp_path: Path, election: str, said: str
) -> None:
    from agent.daemon.config import ConfigError, load_config

    path = tmp_path / "steward.yaml"
    path.write_text(f"backend: kubernetes\nkubernetes:\n  leader_election:\n    {election}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}:") and said in message
