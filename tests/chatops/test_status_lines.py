"""The status a channel is shown: cards in percent as NVML and DCGM give them."""

from __future__ import annotations

from agent.chatops.status import node_lines
from lab.sim.backend import SimCluster
from lab.sim.day import default_day


def test_card_utilization_reads_in_percent() -> None:
    state = SimCluster(default_day()).observe()
    (ws,) = [line for line in node_lines(state) if "ws-1" in line]
    card = next(g for n in state.nodes if n.name == "ws-1" for g in n.gpus)
    assert card.utilization.value is not None and 1 < card.utilization.value <= 100
    assert f"{card.utilization.value:.0f}%" in ws and "00%" not in ws
