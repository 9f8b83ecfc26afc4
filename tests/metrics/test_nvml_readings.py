"""NVML readings become world-model cards whose metrics say where they came from."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pynvml
import pytest
from pydantic import TypeAdapter

from tests.metrics.nvml_replay import ReplayNvml
from tools.metrics.nvml.readings import (
    HostMemory,
    NvmlUnavailable,
    Snapshot,
    gpus_from_snapshot,
    read_host_memory,
    read_snapshot,
)

FIXTURE = Path(__file__).parent.parent / "fixtures" / "nvml" / "h200-recorded.json"
HOST = HostMemory(total_bytes=128 * 2**30, available_bytes=100 * 2**30)


@pytest.fixture(scope="module")
def recorded() -> list[Snapshot]:
    return TypeAdapter(list[Snapshot]).validate_json(FIXTURE.read_bytes())


def test_a_real_load_shows_within_one_sample_and_leaves_within_one(
    recorded: list[Snapshot],
) -> None:
    utils = [s.devices[0].util_gpu_pct for s in recorded]
    first_busy = next(i for i, u in enumerate(utils) if u and u > 90)
    assert utils[first_busy - 1] == 0
    last_busy = max(i for i, u in enumerate(utils) if u and u > 90)
    assert utils[last_busy + 1] == 0
    busy = gpus_from_snapshot(recorded[first_busy], "h200-1")[0]
    assert busy.utilization.value is not None and busy.utilization.value > 90
    assert busy.power_w.value is not None and busy.power_w.value > 200
    assert len(busy.clients) == 1


def test_the_drivers_reservation_is_not_counted_as_used(recorded: list[Snapshot]) -> None:
    idle = recorded[0].devices[0]
    assert idle.memory_used_bytes == 0
    assert idle.memory_reserved_bytes is not None and idle.memory_reserved_bytes > 500 * 2**20
    card = gpus_from_snapshot(recorded[0], "h200-1")[0]
    assert card.memory_used_bytes.value == 0
    assert card.memory_used_bytes.source == "nvml"
    assert card.model == "H200"


def test_reading_through_nvml_calls_round_trips(recorded: list[Snapshot]) -> None:
    busy = next(s for s in recorded if s.devices[0].processes)
    again = read_snapshot(ReplayNvml(busy))
    expected = busy.devices[0].model_dump()
    assert again.devices[0].model_dump() == expected


def test_unified_memory_falls_back_to_the_host_and_says_so(recorded: list[Snapshot]) -> None:
    nvml = ReplayNvml(recorded[0], memory_not_supported=True, name_override="NVIDIA GB10")
    snapshot = read_snapshot(nvml)
    assert snapshot.devices[0].memory_status == "not_supported"
    card = gpus_from_snapshot(snapshot, "gx10-a", HOST)[0]
    assert card.memory_total_bytes.value == HOST.total_bytes
    assert card.memory_used_bytes.value == HOST.used_bytes
    assert "unified memory" in card.memory_used_bytes.source
    assert card.utilization.usable


def test_a_discrete_card_without_memory_figures_is_missing_not_invented(
    recorded: list[Snapshot],
) -> None:
    snapshot = read_snapshot(ReplayNvml(recorded[0], memory_not_supported=True))
    card = gpus_from_snapshot(snapshot, "h200-1", HOST)[0]
    assert card.memory_used_bytes.status == "missing"
    assert card.memory_used_bytes.value is None


def test_a_host_without_a_driver_says_so() -> None:
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        with pytest.raises(NvmlUnavailable, match="no NVIDIA driver"):
            read_snapshot()
    else:  # a machine with a card: the real reading must parse
        pynvml.nvmlShutdown()
        snapshot = read_snapshot()
        assert snapshot.taken_at <= datetime.now(UTC)


def test_host_memory_reads_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       1000 kB\nMemFree:  10 kB\nMemAvailable:    400 kB\n")
    host = read_host_memory(meminfo)
    assert (host.total_bytes, host.used_bytes) == (1000 * 1024, 600 * 1024)
