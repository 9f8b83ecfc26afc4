"""Finding the cluster as kubectl finds it, and saying clearly when it cannot be found.

In a pod (KUBERNETES_SERVICE_HOST set, no kubeconfig named): the service account. Otherwise the
kubeconfig: `kubeconfig` from the settings, else $KUBECONFIG (files joined by ':'), else
~/.kube/config; its `context`, else the current one. A file that does not parse, a context it
does not have, or no configuration at all is an InvalidInput naming the file and the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from tools.backends.kubernetes.settings import KubernetesSettings
from tools.errors import InvalidInput


def kubeconfig_paths(settings: KubernetesSettings) -> list[Path]:
    if settings.kubeconfig is not None:
        return [settings.kubeconfig]
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def _in_cluster(settings: KubernetesSettings) -> bool:
    if settings.in_cluster != "auto":
        return bool(settings.in_cluster)
    return (
        settings.kubeconfig is None
        and "KUBECONFIG" not in os.environ
        and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    )


def _check_file(path: Path, context: str | None) -> None:
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise InvalidInput(f"kubeconfig {path}: cannot read it: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f":{where.line + 1}:{where.column + 1}" if where is not None else ""
        raise InvalidInput(
            f"kubeconfig {path}{at}: does not parse as YAML ({getattr(exc, 'problem', exc)}); "
            "fix the file or point kubernetes.kubeconfig at another"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("contexts", []), list):
        raise InvalidInput(f"kubeconfig {path}: not a kubeconfig (no list of contexts)")
    if context is not None:
        names = [c.get("name") for c in doc.get("contexts") or [] if isinstance(c, dict)]
        if context not in names:
            known = ", ".join(str(n) for n in names) or "none"
            raise InvalidInput(
                f"kubeconfig {path}: no context named {context!r} (known: {known}); "
                "pass --context or set kubernetes.context to one of them"
            )


def configuration(settings: KubernetesSettings) -> client.Configuration:
    """The client configuration for the cluster the settings name (see the module docstring)."""
    cfg = client.Configuration()
    if _in_cluster(settings):
        try:
            config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            raise InvalidInput(f"kubernetes: in-cluster configuration: {exc}") from None
    else:
        paths = [p for p in kubeconfig_paths(settings) if p.exists()]
        if not paths and settings.server is None:
            tried = ", ".join(str(p) for p in kubeconfig_paths(settings))
            raise InvalidInput(
                f"kubernetes: no kubeconfig found (tried {tried}); set kubernetes.kubeconfig, "
                "$KUBECONFIG or kubernetes.server"
            )
        if paths:
            for path in paths:
                _check_file(path, None)
            if settings.context is not None and len(paths) == 1:
                _check_file(paths[0], settings.context)
            try:
                config.load_kube_config(  # type: ignore[no-untyped-call]
                    config_file=os.pathsep.join(str(p) for p in paths),
                    context=settings.context,
                    client_configuration=cfg,
                    persist_config=False,
                )
            except (ConfigException, ValueError, TypeError, KeyError) as exc:
                raise InvalidInput(
                    f"kubeconfig {os.pathsep.join(str(p) for p in paths)}: {exc}"
                ) from None
    if settings.server is not None:
        cfg.host = settings.server.rstrip("/")
    cfg.retries = 0  # tenacity retries, with Steward's policy (errors.py)
    return cfg


def api_client(settings: KubernetesSettings) -> client.ApiClient:
    return client.ApiClient(configuration(settings))
