"""`/steward status` in a few lines: the facts `steward status` shows, one line per thing; the
nodes go to the answer's thread.

The CLI prints tables; a chat answer must be short, so each workload is one line (ready of
desired, queue, wait, tokens per second), each node one line (its cards, how busy, cordoned or
not ready), then the active mode. A reading that is stale or missing says so, as in the CLI.
"""

from __future__ import annotations

from tools.model import ClusterState, Metric


def workload_lines(state: ClusterState) -> list[str]:
    """The active mode, then one line per workload."""
    mode = state.active_mode
    lines = [
        f"mode: {mode.name} since {mode.since:%H:%M:%S}" if mode else "mode: none serves whole"
    ]
    for w in state.workloads:
        lines.append(
            f"{w.name} ({w.pool}): {w.ready_replicas}/{w.desired_replicas} ready, "
            f"queue {_fmt(w.queue_depth, digits=0)}, wait {_fmt(w.queue_wait_s, unit=' s')}, "
            f"{_fmt(w.tokens_per_s, digits=0)} tok/s"
        )
    return lines


def node_lines(state: ClusterState) -> list[str]:
    """One line per node: its cards and how busy each is, cordoned or not ready."""
    lines: list[str] = []
    for n in state.nodes:
        flags = "".join((" NotReady" * (not n.ready), " cordoned" * n.cordoned))
        cards = ", ".join(f"{g.model} {_fmt(g.utilization, 1.0, '%', 0)}" for g in n.gpus)
        lines.append(f"node {n.name}{flags}: {cards or 'no cards'}")
    return lines


def _fmt(m: Metric, scale: float = 1.0, unit: str = "", digits: int = 1) -> str:
    if m.value is None:
        return "missing"
    text = f"{m.value / scale:.{digits}f}{unit}"
    return text if m.status == "fresh" else f"{text} (stale)"
