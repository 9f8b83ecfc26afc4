"""A stand-in for the `pynvml` module that answers with recorded readings.

NVML needs an NVIDIA driver, which no test machine here has; this double answers the same calls
with what a real H200 answered (tests/fixtures/nvml/h200-recorded.json, recorded with
scripts/record-nvml.py on a real card), and can be told to answer NotSupported for memory the way
GB10's unified memory does.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pynvml

from tools.metrics.nvml.readings import DeviceReading, Snapshot


@dataclass
class ReplayNvml:
    snapshot: Snapshot
    memory_not_supported: bool = False
    name_override: str | None = None
    initialised: bool = False

    NVMLError = pynvml.NVMLError
    NVML_ERROR_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
    nvmlMemory_v2 = pynvml.nvmlMemory_v2

    def nvmlInit(self) -> None:
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.snapshot.driver

    def nvmlSystemGetNVMLVersion(self) -> str:
        return self.snapshot.nvml_version

    def nvmlDeviceGetCount(self) -> int:
        assert self.initialised, "NVML used before nvmlInit"
        return len(self.snapshot.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> DeviceReading:
        return self.snapshot.devices[index]

    def nvmlDeviceGetUUID(self, d: DeviceReading) -> bytes:
        return d.uuid.encode()

    def nvmlDeviceGetName(self, d: DeviceReading) -> str:
        return self.name_override or d.name

    def nvmlDeviceGetMemoryInfo(self, d: DeviceReading, version: int | None = None) -> Any:
        if self.memory_not_supported:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        used = d.memory_used_bytes or 0
        reserved = d.memory_reserved_bytes or 0
        if version is None:  # v1 counts the driver's reservation as used
            return SimpleNamespace(total=d.memory_total_bytes, used=used + reserved)
        return SimpleNamespace(total=d.memory_total_bytes, used=used, reserved=reserved)

    def nvmlDeviceGetUtilizationRates(self, d: DeviceReading) -> Any:
        return SimpleNamespace(gpu=d.util_gpu_pct, memory=d.util_memory_pct)

    def nvmlDeviceGetMigMode(self, d: DeviceReading) -> list[int]:
        return [int(bool(d.mig_enabled)), int(bool(d.mig_enabled))]

    def nvmlDeviceGetComputeRunningProcesses(self, d: DeviceReading) -> list[Any]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in d.processes]

    def nvmlDeviceGetPowerUsage(self, d: DeviceReading) -> int | None:
        return d.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, d: DeviceReading) -> int | None:
        return d.power_limit_mw

    def nvmlDeviceGetTotalEnergyConsumption(self, d: DeviceReading) -> int | None:
        return d.energy_mj
