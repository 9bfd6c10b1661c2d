"""What GPU the run has: CuPy and a CUDA device present (require_gpu), and the GPU part of the recorded
environment (device, driver, CUDA, CuPy, clocks). CuPy and NVML are imported lazily; what cannot be read
is recorded as missing rather than failing a run."""

from __future__ import annotations

from typing import Any

from launchbench.backend.nvml import NvmlMonitor, complete_uuid
from launchbench.errors import NoGpuError
from launchbench.results.environment import host_environment, pci_placement

INSTALL_HINT = "install the CuPy wheel matching your CUDA: pip install -e '.[cuda13]' (or '.[cuda12]')"


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
        raise NoGpuError(
            "no CUDA device is visible to CuPy; run on a machine with an NVIDIA GPU and driver (nvidia-smi)."
        )
    if not 0 <= device < count:
        raise NoGpuError(
            f"device {device} does not exist; this machine has {count} CUDA device(s) (0..{count - 1})."
        )


def _version_string(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def _nccl_version(code: int) -> str:
    """NCCL's version code (e.g. 22703) as text (2.27.3)."""
    major, rest = divmod(code, 10000) if code >= 10000 else divmod(code, 1000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


def _placement(cupy: Any, device: int) -> dict[str, Any]:
    """The GPU's PCI address, its NUMA node and the CPUs local to it ({} where CUDA cannot say)."""
    try:
        address = str(cupy.cuda.runtime.deviceGetPCIBusId(device))
    except Exception:  # noqa: BLE001 - the placement is informative; a run does not need it
        return {}
    return {"pci_address": address, **pci_placement(address)}


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
    env["gpu"].update(_placement(cupy, device))
    env["cuda_driver"] = _version_string(cupy.cuda.runtime.driverGetVersion())
    env["cuda_runtime"] = _version_string(cupy.cuda.runtime.runtimeGetVersion())
    env["cupy"] = cupy.__version__
    env["device_count"] = cupy.cuda.runtime.getDeviceCount()
    try:
        from cupy.cuda import nccl

        env["nccl"] = _nccl_version(nccl.get_version())
    except Exception:  # noqa: BLE001 - CuPy without NCCL: cases on several GPUs cannot run
        env["nccl"] = None
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
    env["capture_timing"] = (
        "split (cuda.bindings)" if env["cuda_bindings"] else "combined (CuPy end_capture instantiates)"
    )
    return env
