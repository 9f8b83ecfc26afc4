"""docs/kubernetes.md's first deploy step with a real registry: the image built from
docker/Dockerfile is pushed with podman to an OCI registry of the operator's (here the CNCF
distribution registry, Debian's `docker-registry`, on loopback and plain HTTP), the registry
serves it under the digest podman reported, a machine with an empty image store pulls it back
whole (the same image id), and the kustomization, given that reference, names it in the
StatefulSet that `kubectl apply -k docker/` would create."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.container.conftest import ROOT, Built

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
REPOSITORY = "team/steward"
TAG = "0.1.0"
MANIFEST_TYPES = (
    "application/vnd.oci.image.manifest.v1+json, "
    "application/vnd.docker.distribution.manifest.v2+json"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """A registry on 127.0.0.1 storing in tmp_path; yields its host:port."""
    binary = shutil.which("docker-registry")
    if binary is None:
        pytest.fail("docker-registry is not installed (.ci/run installs Debian's package)")
    port = _free_port()
    config = tmp_path / "registry.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "version": 0.1,
                "log": {"level": "warn"},
                "storage": {"filesystem": {"rootdirectory": str(tmp_path / "registry")}},
                "http": {"addr": f"127.0.0.1:{port}"},
            }
        )
    )
    log = (tmp_path / "registry.log").open("w")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log.close()
                    pytest.fail(
                        f"the registry did not start: {(tmp_path / 'registry.log').read_text()}"
                    )
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _podman(*args: str, env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        ["podman", *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"podman {' '.join(args)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_the_image_pushed_to_a_registry_pulls_back_and_names_the_manifests(
    built_image: Built, registry: str, tmp_path: Path
) -> None:
    env = built_image.env
    reference = f"{registry}/{REPOSITORY}:{TAG}"
    digest_file = tmp_path / "digest"
    # As docs/kubernetes.md says (a registry on plain HTTP: --tls-verify=false).
    _podman("push", "--tls-verify=false", "--digestfile", str(digest_file), built_image.name,
            reference, env=env)  # fmt: skip
    digest = digest_file.read_text().strip()
    assert digest.startswith("sha256:") and len(digest) == 71, digest

    # The registry serves the tag as the manifest podman wrote, under that digest.
    request = urllib.request.Request(
        f"http://{registry}/v2/{REPOSITORY}/manifests/{TAG}", headers={"Accept": MANIFEST_TYPES}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Docker-Content-Digest"] == digest
        manifest = json.loads(answer.read())
    assert len(manifest["layers"]) >= 2  # the base and Steward's own layers

    # A machine that has never seen the image (an empty store, as a node's) pulls it whole.
    built_id = _podman("image", "inspect", "--format", "{{.Id}}", built_image.name, env=env)
    # podman refuses a runroot path longer than 50 characters: pytest's tmp_path is longer.
    store = Path(tempfile.mkdtemp(prefix="steward-node-"))
    other = ("--root", str(store / "root"), "--runroot", str(store / "run"))
    try:
        _podman(*other, "pull", "--quiet", "--tls-verify=false", reference, env=env)
        pulled = _podman(*other, "image", "inspect", "--format", "{{.Id}} {{.Digest}}",
                         reference, env=env).split()  # fmt: skip
        assert pulled == [built_id.strip(), digest]
        by_digest = f"{registry}/{REPOSITORY}@{digest}"
        assert _podman(*other, "image", "inspect", "--format", "{{.Id}}", by_digest,
                       env=env).strip() == built_id.strip()  # fmt: skip
    finally:
        subprocess.run(["podman", *other, "rmi", "--all", "--force"], env=env,
                       capture_output=True, check=False)  # fmt: skip
        shutil.rmtree(store, ignore_errors=True)

    # The kustomization given that image, pinned by digest (`images:` as the docs say), names
    # it in the StatefulSet the cluster will run.
    docker = tmp_path / "docker"
    shutil.copytree(ROOT / "docker", docker)
    kustomization = docker / "kustomization.yaml"
    doc = yaml.safe_load(kustomization.read_text())
    (entry,) = doc["images"]
    entry.pop("newTag")
    entry["newName"], entry["digest"] = f"{registry}/{REPOSITORY}", digest
    kustomization.write_text(yaml.safe_dump(doc, sort_keys=False))
    rendered = subprocess.run(
        [KUBECTL, "kustomize", str(docker)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (sts,) = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "StatefulSet"]
    images = [c["image"] for c in sts["spec"]["template"]["spec"]["containers"]]
    assert images == [f"{registry}/{REPOSITORY}@{digest}"]
