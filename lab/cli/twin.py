"""`steward twin`: the simulated cluster served as a Kubernetes API on loopback.

Point kubectl (or `steward run --backend kubernetes`) at it to try Steward, a policy and the
models on a simulated GPU cluster before a real one. The cluster is the data dir's (the built-in
day on first use, or `--scenario`); it is saved there when the twin stops. A kubeconfig for it
is written to DATA_DIR/twin.kubeconfig. lab.twin loads only for this command, which the
product finds through the entry point `steward.commands: twin` (agent/cli/plugins.py).
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from agent.cli.common import DataDirOpt, data_dir, err_console, fail
from agent.cli.status import ScenarioOpt
from lab.extra import require_lab
from lab.sim.opening import open_sim
from tools.errors import StewardError

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: steward-twin
  cluster:
    server: {url}
contexts:
- name: steward-twin
  context:
    cluster: steward-twin
    user: steward
    namespace: {namespace}
current-context: steward-twin
users:
- name: steward
  user:
    token: steward-twin
"""


def twin(  # noqa: PLR0917 - typer maps each option to a parameter
    scenario: ScenarioOpt = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: any free one).")] = 0,
    speed: Annotated[
        float,
        typer.Option("--speed", help="Simulated seconds per wall second (0: only on request)."),
    ] = 1.0,
    namespace: Annotated[
        str, typer.Option("--namespace", help="Namespace of the workloads.")
    ] = "default",
    fault_rate: Annotated[
        float,
        typer.Option("--fault-rate", help="Share of API requests that fail (5xx/409/429/timeout)."),
    ] = 0.0,
    data_dir_opt: DataDirOpt = None,
) -> None:
    """Serve the simulated cluster as a Kubernetes API (kubectl and the official client)."""
    require_lab("twin")
    from lab.twin.faults import FaultSettings
    from lab.twin.server import Twin

    if speed < 0 or not 0 <= fault_rate <= 1 or not 0 <= port < 65536:
        fail("--speed must be >= 0, --fault-rate within 0..1, --port within 0..65535")
    where = data_dir(data_dir_opt)
    try:
        sim = open_sim(where, scenario)
    except StewardError as exc:
        fail(str(exc))
    server = Twin(
        sim,
        namespace=namespace,
        speed=speed,
        port=port,
        faults=FaultSettings(rate=fault_rate),
    )
    try:
        server.start()
    except OSError as exc:
        fail(f"--port {port}: cannot listen on 127.0.0.1: {exc.strerror}")
    kubeconfig = where / "twin.kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(url=server.url, namespace=namespace))
    err_console.print(
        f"steward twin: {sim.scenario.name} at {server.url} (speed {speed:g}x)\n"
        f"  kubectl --server {server.url} get nodes\n  KUBECONFIG={kubeconfig}\n"
        f"  steward plan --kubeconfig {kubeconfig} --context steward-twin\n"
        f"  DCGM {server.url}/twin/exporters/dcgm/metrics, "
        f"vLLM {server.url}/twin/exporters/engines/metrics, "
        f"Kueue {server.url}/twin/exporters/kueue/metrics",
        highlight=False,
    )
    sys.stdout.write(f"{server.url}\n")
    sys.stdout.flush()

    def stop(_sig: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        sim.save(Path(where))


def register(app: typer.Typer) -> None:
    app.command("twin")(twin)
