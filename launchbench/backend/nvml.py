"""NVML: a device's clocks and clock-event ("throttle") reasons through nvidia-ml-py, and how a CUDA
device is found in NVML. nvidia-ml-py is passed in or imported lazily; NVML is optional."""

from __future__ import annotations

from typing import Any

from launchbench.measure.clock import ClockReading

# NVML clock-event ("throttle") reasons; GPU idle is not throttling and is left out.
_THROTTLE_REASONS = {
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def _uuid_string(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def complete_uuid(raw: bytes | None) -> str | None:
    """CuPy's device UUID as NVML spells it, or None when CuPy's bytes are not all 16 of them: CuPy reads
    the property as a C string, so a UUID with a zero byte comes back cut short (seen on an H200)."""
    return _uuid_string(raw) if raw is not None and len(raw) == 16 else None


def nvml_handle(nvml: Any, raw_uuid: bytes | None, pci_bus_id: str) -> Any:
    """NVML's handle for a CUDA device: by UUID when CuPy gave all of it, else by PCI bus id. Never by
    index: CUDA's and NVML's device indices need not agree (CUDA_VISIBLE_DEVICES, device order)."""
    uuid = complete_uuid(raw_uuid)
    if uuid is not None:
        return nvml.nvmlDeviceGetHandleByUUID(uuid)
    return nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)


class NvmlMonitor:
    """SM/memory clocks and throttle reasons of one device through nvidia-ml-py."""

    def __init__(self, handle: Any, nvml: Any):
        self._handle = handle
        self._nvml = nvml
        self._reasons = (
            getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
            or nvml.nvmlDeviceGetCurrentClocksThrottleReasons
        )

    @classmethod
    def for_cuda_device(cls, device: int) -> NvmlMonitor | None:
        try:
            import cupy
            import pynvml

            pynvml.nvmlInit()
            uuid = cupy.cuda.runtime.getDeviceProperties(device).get("uuid")
            handle = nvml_handle(pynvml, uuid, cupy.cuda.Device(device).pci_bus_id)
            monitor = cls(handle, pynvml)
            monitor.read()
            return monitor
        except Exception:  # noqa: BLE001 - NVML is optional
            return None

    def uuid(self) -> str:
        value = self._nvml.nvmlDeviceGetUUID(self._handle)
        return value.decode() if isinstance(value, bytes) else str(value)

    def read(self) -> ClockReading:
        nvml = self._nvml
        sm = nvml.nvmlDeviceGetClockInfo(self._handle, nvml.NVML_CLOCK_SM)
        mem = nvml.nvmlDeviceGetClockInfo(self._handle, nvml.NVML_CLOCK_MEM)
        mask = int(self._reasons(self._handle))
        reasons = tuple(name for bit, name in _THROTTLE_REASONS.items() if mask & bit)
        return ClockReading(float(sm), float(mem), reasons)

    def max_clocks(self) -> dict[str, float]:
        nvml = self._nvml
        return {
            "sm_max_mhz": float(nvml.nvmlDeviceGetMaxClockInfo(self._handle, nvml.NVML_CLOCK_SM)),
            "mem_max_mhz": float(nvml.nvmlDeviceGetMaxClockInfo(self._handle, nvml.NVML_CLOCK_MEM)),
        }
