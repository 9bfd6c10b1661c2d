"""What the run ran on: GPU, driver, CUDA, CuPy, clocks (NVML), host, Python, launchbench, git commit.

CuPy and NVML are imported lazily; everything degrades to "unknown" rather than failing a run.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from launchbench import __version__
from launchbench.errors import NoGpuError
from launchbench.measure.clock import ClockReading

INSTALL_HINT = "install the CuPy wheel matching your CUDA: pip install -e '.[cuda13]' (or '.[cuda12]')"

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


def require_gpu(device: int = 0) -> None:
    """Raise NoGpuError with one clear sentence when CuPy or a CUDA device is missing."""
    try:
        import cupy
    except ImportError:
        raise NoGpuError(f"CuPy is not installed, so there is no GPU to measure; {INSTALL_HINT}.") from None
    except Exception as err:  # a broken CuPy install raises many things at import
        raise NoGpuError(f"CuPy cannot be imported ({type(err).__name__}: {err}); {INSTALL_HINT}.") from None
    try:
        available = cupy.is_available()
        count = cupy.cuda.runtime.getDeviceCount() if available else 0
    except Exception as err:  # noqa: BLE001 - driver missing or broken
        raise NoGpuError(f"no usable CUDA device: {err}; check the NVIDIA driver with nvidia-smi.") from None
    if not available or count == 0:
        raise NoGpuError("no CUDA device is visible to CuPy; run on a machine with an NVIDIA GPU and driver (nvidia-smi).")
    if not 0 <= device < count:
        raise NoGpuError(f"device {device} does not exist; this machine has {count} CUDA device(s) (0..{count - 1}).")


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


def _version_string(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


class NvmlMonitor:
    """SM/memory clocks and throttle reasons of one device through nvidia-ml-py."""

    def __init__(self, handle: Any, nvml: Any):
        self._handle = handle
        self._nvml = nvml
        self._reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or nvml.nvmlDeviceGetCurrentClocksThrottleReasons

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


def host_cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit(start: Path | None = None) -> str | None:
    where = start or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=5, check=False
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=where, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def host_environment() -> dict[str, Any]:
    return {
        "host": {
            "cpu": host_cpu(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "hostname": platform.node(),
        },
        "python": sys.version.split()[0],
        "launchbench": __version__,
        "git_commit": git_commit(),
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def collect_environment(device: int = 0) -> dict[str, Any]:
    import cupy

    env = host_environment()
    props = cupy.cuda.runtime.getDeviceProperties(device)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    uuid = props.get("uuid")
    env["gpu"] = {
        "index": device,
        "name": name,
        "uuid": complete_uuid(uuid),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": props.get("multiProcessorCount"),
        "memory_bytes": props.get("totalGlobalMem"),
        "pci_bus_id": props.get("pciBusID"),
    }
    env["cuda_driver"] = _version_string(cupy.cuda.runtime.driverGetVersion())
    env["cuda_runtime"] = _version_string(cupy.cuda.runtime.runtimeGetVersion())
    env["cupy"] = cupy.__version__
    try:
        import numpy

        env["numpy"] = numpy.__version__
    except ImportError:  # pragma: no cover
        pass
    try:
        import cuda.bindings

        env["cuda_bindings"] = cuda.bindings.__version__
    except ImportError:
        env["cuda_bindings"] = None
    env["driver"] = None
    monitor = NvmlMonitor.for_cuda_device(device)
    if monitor is not None:
        import pynvml

        driver = pynvml.nvmlSystemGetDriverVersion()
        env["driver"] = driver.decode() if isinstance(driver, bytes) else driver
        env["gpu"]["uuid"] = env["gpu"]["uuid"] or monitor.uuid()
        reading = monitor.read()
        env["clocks"] = {"sm_mhz": reading.sm_mhz, "mem_mhz": reading.mem_mhz, **monitor.max_clocks()}
        env["nvml"] = True
    else:
        env["nvml"] = False
    env["capture_timing"] = "split (cuda.bindings)" if env["cuda_bindings"] else "combined (CuPy end_capture instantiates)"
    return env


# ------------------------------------------------------------------------------------------ describing


ENV_ITEMS: tuple[str, ...] = ("gpu", "driver", "cuda_runtime", "cupy")
ENV_LABELS: dict[str, str] = {"gpu": "GPU", "driver": "driver", "cuda_runtime": "CUDA runtime", "cupy": "CuPy"}
# Where each item may sit: collect_environment's layout first, then older or hand-written layouts, then a
# summary's own (so summarizing a summary gives it back).
_ENV_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "gpu": (("gpu", "name"), ("gpu_name",), ("gpu",)),
    "driver": (("driver",), ("gpu", "driver"), ("driver_version",), ("gpu", "driver_version")),
    "cuda_runtime": (("cuda_runtime",), ("cuda", "runtime"), ("cuda_runtime_version",)),
    "cupy": (("cupy",), ("cupy_version",), ("cupy", "version")),
}
UNKNOWN = "unknown"


def _lookup(env: Mapping[str, Any], path: Sequence[str]) -> Any:
    node: Any = env
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, Mapping):
        node = node.get("version")
    return node


def summarize_environment(env: Mapping[str, Any]) -> dict[str, str]:
    """GPU model, driver, CUDA runtime and CuPy version of an environment ('unknown' where not recorded)."""
    out: dict[str, str] = {}
    for item in ENV_ITEMS:
        value = next((v for p in _ENV_PATHS[item] if (v := _lookup(env, p)) not in (None, "")), None)
        out[item] = UNKNOWN if value is None else str(value)
    return out


def describe_environment(env: Mapping[str, Any], *more: str) -> str:
    """One line naming what a run ran on, e.g. 'NVIDIA H200 (driver 580.159.04, CUDA 13.2, CuPy 14.2.0)';
    ``env`` is a recorded environment or its summary, ``more`` further items for the parentheses."""
    s = summarize_environment(env)
    items = [f"driver {s['driver']}", f"CUDA {s['cuda_runtime']}", f"CuPy {s['cupy']}", *more]
    return f"{s['gpu']} ({', '.join(items)})"
