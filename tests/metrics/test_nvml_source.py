"""NVML as a metric source for this node: the recorded H200 merged into the node's card by
UUID, the age carried over, and an NVML that stops answering leaves the readings stale."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import TypeAdapter

from tests.metrics.nvml_replay import ReplayNvml
from tools.metrics.nvml.readings import HostMemory, NvmlUnavailable, Snapshot
from tools.metrics.nvml.source import NvmlSource
from tools.model import ClusterState, Gpu, Node

FIXTURE = Path(__file__).parent.parent / "fixtures" / "nvml" / "h200-recorded.json"
RECORDED = TypeAdapter(list[Snapshot]).validate_json(FIXTURE.read_bytes())
BUSY = next(s for s in RECORDED if (s.devices[0].util_gpu_pct or 0) > 90)
HOST = HostMemory(total_bytes=256 * 2**30, available_bytes=200 * 2**30)
AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _state() -> ClusterState:
    card = Gpu(uuid=BUSY.devices[0].uuid, index=0, model="H200", node="h200-1")
    other = Node(name="elsewhere", memory_total_bytes=2**30)
    node = Node(name="h200-1", memory_total_bytes=HOST.total_bytes, gpus=(card,))
    return ClusterState(observed_at=AT, nodes=(node, other))


def test_the_node_gets_nvml_readings_on_its_own_card() -> None:
    fresh = BUSY.model_copy(update={"taken_at": datetime.now(UTC)})
    source = NvmlSource("h200-1", nvml=ReplayNvml(fresh), host_memory=lambda: HOST)
    state = source.read(_state())
    card = state.nodes[0].gpus[0]
    assert card.utilization.value == BUSY.devices[0].util_gpu_pct
    assert card.utilization.source == "nvml"
    assert card.power_w.value is not None and card.power_w.value > 200
    assert card.memory_used_bytes.value == BUSY.devices[0].memory_used_bytes
    assert card.utilization.observed_at is not None
    assert AT - card.utilization.observed_at < timedelta(seconds=5)  # on the state's clock
    assert state.nodes[1] == _state().nodes[1]  # other nodes untouched


def test_nvml_that_stops_answering_leaves_the_last_readings_stale() -> None:
    answers: list[Snapshot | None] = [BUSY.model_copy(update={"taken_at": datetime.now(UTC)}), None]

    def read() -> Snapshot:
        got = answers.pop(0)
        if got is None:
            raise NvmlUnavailable("NVML could not start (driver gone)")
        return got

    source = NvmlSource("h200-1", snapshot=read, host_memory=lambda: HOST)
    first = source.read(_state()).nodes[0].gpus[0]
    later = source.read(_state()).nodes[0].gpus[0]
    assert later.utilization.status == "stale"
    assert later.utilization.value == first.utilization.value
    assert later.utilization.source == "nvml: NVML could not start (driver gone)"


def test_a_host_that_is_not_a_node_leaves_the_observation_alone() -> None:
    source = NvmlSource("not-here", nvml=ReplayNvml(BUSY), host_memory=lambda: HOST)
    assert source.read(_state()) == _state()
