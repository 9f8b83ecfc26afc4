"""An observation's cards and job queues in the Prometheus text format, under real names.

What a DCGM exporter (and Kueue) would serve for the same cluster, so that a real Prometheus can
scrape a simulated or recorded one (the Kubernetes twin, `steward gpus --serve`, the tests and
`steward bench metrics`). Cards are written as the DCGM exporter writes them
(`DCGM_FI_DEV_GPU_UTIL{gpu, UUID, device, modelName, Hostname, container, namespace, pod}`,
memory in MiB, power in W); `queue_lines` writes Kueue's
`kueue_local_queue_pending_workloads{name}` for render and batch jobs. The serving engines
(vLLM, SGLang) are lab.twin.engines, which shares the helpers here.

Only fresh readings are written: a real exporter has nothing to say about a value it did not
read. Memory taken from the host on unified-memory cards is labelled `memory_source`.
The classic text format (version 0.0.4) is written, never OpenMetrics (see PARTS note in
docs/metrics.md on `vllm:` names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from tools.model import ClusterState, Gpu, Metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
MIB = 2**20
QUEUELESS = frozenset({"render", "batch"})
_CARD_FAMILIES = (
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."),
)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def label_text(pairs: Iterable[tuple[str, str]]) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs) + "}"


def number(value: float) -> str:
    return repr(float(value)) if value != int(value) else str(int(value))


def fresh_value(metric: Metric) -> float | None:
    return metric.value if metric.usable else None


PodNamer = Callable[[str, int], str]
"""(workload name, replica index) -> the name of the replica's pod where its engine runs."""


def indexed(name: str, index: int) -> str:
    """The default pod name: NAME-INDEX, as a StatefulSet names its pods."""
    return f"{name}-{index}"


def pod_of(client: str, namespace: str, pods: PodNamer = indexed) -> tuple[str, str] | None:
    """(namespace, pod) of a card client written `workload/replica-index`; None for `pid/…`."""
    workload, _, index = client.rpartition("/")
    if not workload or workload == "pid" or not index.isdigit():
        return None
    ns, _, name = workload.rpartition("/")
    return (ns or namespace), pods(name, int(index))


def card_lines(
    state: ClusterState, namespace: str = "default", pods: PodNamer = indexed
) -> list[str]:
    """The DCGM exporter's view of every card of `state`."""
    rows: dict[str, list[str]] = {name: [] for name, _ in _CARD_FAMILIES}
    for node in state.nodes:
        for gpu in node.gpus:
            _card(gpu, node.name, namespace, rows, pods)
    out: list[str] = []
    for name, help_text in _CARD_FAMILIES:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")
        out.extend(rows[name])
    return out


def _card(gpu: Gpu, host: str, namespace: str, rows: dict[str, list[str]], pods: PodNamer) -> None:
    model = gpu.model if gpu.model.startswith("NVIDIA") else f"NVIDIA {gpu.model}"
    pairs = [
        ("gpu", str(gpu.index)),
        ("UUID", gpu.uuid),
        ("device", f"nvidia{gpu.index}"),
        ("modelName", model),
        ("Hostname", host),
    ]
    for client in gpu.clients:
        pod = pod_of(client, namespace, pods)
        if pod is not None:
            container = client.rpartition("/")[0].rpartition("/")[2]  # the workload's name
            pairs += [("container", container), ("namespace", pod[0]), ("pod", pod[1])]
            break
    labels = label_text(pairs)
    util, power = fresh_value(gpu.utilization), fresh_value(gpu.power_w)
    if util is not None:
        rows["DCGM_FI_DEV_GPU_UTIL"].append(f"DCGM_FI_DEV_GPU_UTIL{labels} {number(util)}")
    if power is not None:
        rows["DCGM_FI_DEV_POWER_USAGE"].append(
            f"DCGM_FI_DEV_POWER_USAGE{labels} {number(round(power, 3))}"
        )
    used, total = fresh_value(gpu.memory_used_bytes), fresh_value(gpu.memory_total_bytes)
    if used is None or total is None:
        return
    if "unified memory" in gpu.memory_used_bytes.source:
        labels = labels[:-1] + ',memory_source="host-meminfo"}'
    rows["DCGM_FI_DEV_FB_USED"].append(f"DCGM_FI_DEV_FB_USED{labels} {int(used // MIB)}")
    free = max(0, int(total // MIB) - int(used // MIB))
    rows["DCGM_FI_DEV_FB_FREE"].append(f"DCGM_FI_DEV_FB_FREE{labels} {free}")


def queue_lines(state: ClusterState, namespace: str = "default") -> list[str]:
    """Kueue's view of the render and batch workloads: the jobs each one's LocalQueue holds."""
    lines = ["# TYPE kueue_local_queue_pending_workloads gauge"]
    for w in state.workloads:
        depth = fresh_value(w.queue_depth)
        if w.kind not in QUEUELESS or depth is None:
            continue
        ns, _, name = w.name.rpartition("/")
        pairs = [("name", name), ("namespace", ns or namespace), ("status", "active")]
        lines.append(f"kueue_local_queue_pending_workloads{label_text(pairs)} {number(depth)}")
    return lines


def render(lines: Iterable[str], at: datetime | None = None) -> bytes:
    """One scrape's body; with `at`, every sample carries that time (the text format's optional
    timestamp, in milliseconds), as an exporter whose clock is not Prometheus's must say."""
    if at is not None:
        stamp = f" {round(at.timestamp() * 1000)}"
        lines = [line if line.startswith("#") else line + stamp for line in lines]
    return ("\n".join(lines) + "\n").encode()
