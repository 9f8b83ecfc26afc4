"""NVML: the node-local view of the cards, read through nvidia-ml-py (`import pynvml`).

`read_snapshot()` takes one raw reading of every card — what NVML answered, or that it answered
NotSupported — and `gpus_from_snapshot()` turns it into `tools.model.Gpu` objects whose metrics
carry their freshness. The two steps are apart so that a reading can be recorded on a machine
with cards (`steward gpus --record FILE`) and replayed where there are none.

Two facts shape it (seen on real cards): `nvmlDeviceGetMemoryInfo` v1 counts the driver's
reservation (~645 MB on an idle H200) as used, so the v2 struct is asked first and its `used`
excludes `reserved`; and on GB10's unified memory the memory queries may answer NotSupported, so
the card's memory is then taken from the host's /proc/meminfo and the metric says so in `source`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.errors import TemporaryError
from tools.model import MISSING, Gpu, Metric, Sharing

MemoryStatus = Literal["ok", "not_supported", "error"]

UNIFIED_MEMORY_MODELS = ("GB10", "GB200", "GH200")
"""Superchips whose GPU shares the host's memory: NVML memory figures may be NotSupported."""


class NvmlUnavailable(TemporaryError):
    """NVML could not be used here: no library, no driver, or no permission."""


class DeviceReading(BaseModel):
    """What NVML answered for one card at one moment (None: NotSupported or failed)."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    uuid: str
    name: str
    memory_status: MemoryStatus
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    """Used by processes, the driver's reservation excluded (v2 semantics)."""
    memory_reserved_bytes: int | None = None
    util_gpu_pct: int | None = None
    util_memory_pct: int | None = None
    power_mw: int | None = None
    power_limit_mw: int | None = None
    energy_mj: int | None = None
    mig_enabled: bool | None = None
    processes: list[tuple[int, int | None]] = []
    """(pid, used GPU memory in bytes or None when NVML does not say)."""


class Snapshot(BaseModel):
    """One reading of all cards on a host."""

    model_config = ConfigDict(extra="forbid")

    taken_at: datetime
    driver: str
    nvml_version: str
    devices: list[DeviceReading]


class HostMemory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    total_bytes: int
    available_bytes: int

    @property
    def used_bytes(self) -> int:
        return self.total_bytes - self.available_bytes


def read_host_memory(path: Path = Path("/proc/meminfo")) -> HostMemory:
    """The host's memory from /proc/meminfo (MemTotal and MemAvailable, in kB there)."""
    fields: dict[str, int] = {}
    for line in path.read_text().splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            fields[key] = int(parts[0]) * 1024
    return HostMemory(total_bytes=fields["MemTotal"], available_bytes=fields["MemAvailable"])


def _load_pynvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:  # nvidia-ml-py is a dependency; this is a broken install
        raise NvmlUnavailable(f"nvidia-ml-py is not installed: {exc}") from exc
    return pynvml


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _optional(nvml: Any, call: Callable[[], Any]) -> Any:
    """The call's answer, or None when NVML says NotSupported (or fails for this query only)."""
    try:
        return call()
    except nvml.NVMLError:
        return None


def _memory(nvml: Any, handle: object) -> tuple[MemoryStatus, int | None, int | None, int | None]:
    try:
        info = nvml.nvmlDeviceGetMemoryInfo(handle, version=nvml.nvmlMemory_v2)
        return "ok", int(info.total), int(info.used), int(info.reserved)
    except nvml.NVMLError as exc:
        if getattr(exc, "value", None) == nvml.NVML_ERROR_NOT_SUPPORTED:
            return "not_supported", None, None, None
    try:  # drivers without the v2 call: v1 counts the reservation as used
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        return "ok", int(info.total), int(info.used), None
    except nvml.NVMLError as exc:
        status: MemoryStatus = (
            "not_supported"
            if getattr(exc, "value", None) == nvml.NVML_ERROR_NOT_SUPPORTED
            else "error"
        )
        return status, None, None, None


def _device(nvml: Any, index: int) -> DeviceReading:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    status, total, used, reserved = _memory(nvml, handle)
    util = _optional(nvml, lambda: nvml.nvmlDeviceGetUtilizationRates(handle))
    mig = _optional(nvml, lambda: nvml.nvmlDeviceGetMigMode(handle))
    procs = _optional(nvml, lambda: nvml.nvmlDeviceGetComputeRunningProcesses(handle)) or []
    return DeviceReading(
        index=index,
        uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        name=_text(nvml.nvmlDeviceGetName(handle)),
        memory_status=status,
        memory_total_bytes=total,
        memory_used_bytes=used,
        memory_reserved_bytes=reserved,
        util_gpu_pct=None if util is None else int(util.gpu),
        util_memory_pct=None if util is None else int(util.memory),
        power_mw=_optional(nvml, lambda: int(nvml.nvmlDeviceGetPowerUsage(handle))),
        power_limit_mw=_optional(nvml, lambda: int(nvml.nvmlDeviceGetEnforcedPowerLimit(handle))),
        energy_mj=_optional(nvml, lambda: int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle))),
        mig_enabled=None if mig is None else bool(mig[0]),
        processes=[(int(p.pid), _process_memory(p)) for p in procs],
    )


def _process_memory(process: Any) -> int | None:
    used = getattr(process, "usedGpuMemory", None)
    # NVML reports "not available" as the all-ones value.
    return None if used is None or used >= 2**63 else int(used)


def read_snapshot(nvml: Any | None = None) -> Snapshot:
    """Read every card once. Raises NvmlUnavailable when NVML cannot be used on this host."""
    lib = nvml if nvml is not None else _load_pynvml()
    try:
        lib.nvmlInit()
    except lib.NVMLError as exc:
        raise NvmlUnavailable(
            f"NVML could not start ({exc}): no NVIDIA driver on this host, or no access to it"
        ) from exc
    try:
        return Snapshot(
            taken_at=datetime.now(UTC),
            driver=_text(lib.nvmlSystemGetDriverVersion()),
            nvml_version=_text(lib.nvmlSystemGetNVMLVersion()),
            devices=[_device(lib, i) for i in range(lib.nvmlDeviceGetCount())],
        )
    finally:
        lib.nvmlShutdown()


def record(seconds: float, interval_s: float, nvml: Any | None = None) -> list[Snapshot]:
    """Read every `interval_s` for `seconds` (a fixture for tests, or a look at a load)."""
    snapshots: list[Snapshot] = []
    deadline = time.monotonic() + seconds
    while True:
        snapshots.append(read_snapshot(nvml))
        if time.monotonic() + interval_s > deadline:
            return snapshots
        time.sleep(interval_s)


def _metric(value: float | None, at: datetime, source: str) -> Metric:
    return MISSING if value is None else Metric.fresh(value, at, source)


def gpus_from_snapshot(
    snapshot: Snapshot,
    node: str,
    host_memory: HostMemory | None = None,
    sharing: Sharing | None = None,
) -> tuple[Gpu, ...]:
    """The cards of one snapshot as world-model objects.

    Where NVML could not give memory and the card shares the host's memory, the host's figures
    stand in and the metric's source says `host-meminfo`; otherwise the metric is missing.
    """
    at = snapshot.taken_at
    gpus: list[Gpu] = []
    for d in snapshot.devices:
        total: Metric
        used: Metric
        if d.memory_status == "ok":
            total = _metric(d.memory_total_bytes, at, "nvml")
            used = _metric(d.memory_used_bytes, at, "nvml")
        elif host_memory is not None and d.name.endswith(UNIFIED_MEMORY_MODELS):
            total = Metric.fresh(host_memory.total_bytes, at, "host-meminfo (unified memory)")
            used = Metric.fresh(host_memory.used_bytes, at, "host-meminfo (unified memory)")
        else:
            total = Metric.missing(f"nvml: memory {d.memory_status}")
            used = Metric.missing(f"nvml: memory {d.memory_status}")
        gpus.append(
            Gpu(
                uuid=d.uuid,
                index=d.index,
                model=d.name.removeprefix("NVIDIA ").strip(),
                node=node,
                memory_total_bytes=total,
                memory_used_bytes=used,
                utilization=_metric(d.util_gpu_pct, at, "nvml"),
                power_w=_metric(None if d.power_mw is None else d.power_mw / 1000, at, "nvml"),
                sharing=sharing
                or (Sharing(mode="mig") if d.mig_enabled else Sharing(mode="exclusive")),
                clients=tuple(f"pid/{pid}" for pid, _ in d.processes),
            )
        )
    return tuple(gpus)
