"""The host part of a run's environment (CPU, Python, launchbench, git commit, time) and how any recorded
environment is summarized and described (GPU, driver, CUDA runtime, CuPy) for reports."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from launchbench import __version__
from launchbench.results.metadata import Environment


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
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _sysfs(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def cpu_governor() -> str | None:
    """The CPU frequency governor of CPU 0 (performance, powersave, …), None where cpufreq is absent."""
    return _sysfs("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")


def pci_placement(address: str) -> dict[str, Any]:
    """The NUMA node of a PCI device ("0000:3B:00.0", or NVML's "00000000:3B:00.0") and the CPUs local to it (a cpulist, "0-15,32-47"),
    as sysfs says; None for what it does not say (numa_node -1: no NUMA)."""
    domain, _, rest = address.lower().partition(":")
    base = f"/sys/bus/pci/devices/{domain[-4:].rjust(4, '0')}:{rest}"  # sysfs: a 4-digit domain (NVML: 8)
    node = _sysfs(f"{base}/numa_node")
    return {
        "numa_node": int(node)
        if node is not None and node.lstrip("-").isdigit() and int(node) >= 0
        else None,
        "local_cpus": _sysfs(f"{base}/local_cpulist"),
    }


def parse_cpulist(text: str) -> frozenset[int]:
    """ "0-3,8,10-11" → {0, 1, 2, 3, 8, 10, 11}; an unreadable list is empty."""
    cpus: set[int] = set()
    for part in (p.strip() for p in text.split(",")):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return frozenset()
        cpus.update(range(int(low), int(high if dash else low) + 1))
    return frozenset(cpus)


WHEELS = ("cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x", "cupy-rocm-6-0", "cupy-rocm-5-0", "cupy")


def cupy_build() -> str | None:
    """The distribution that installs the ``cupy`` module (e.g. 'cupy-cuda13x': the CUDA major version
    its wheel was built for), None where CuPy is not installed. The known wheel names are looked up one
    by one (a lookup by name is quick); only an unknown one costs a scan of every installed package."""
    from importlib import metadata, util

    if util.find_spec("cupy") is None:
        return None
    for name in WHEELS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        return name
    try:
        names = metadata.packages_distributions().get("cupy", [])
    except Exception:  # noqa: BLE001 - metadata of another package that cannot be read: not recorded
        return None
    return sorted(names)[0] if names else None


def host_environment() -> dict[str, Any]:
    return {
        "host": {
            "cpu": host_cpu(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "hostname": platform.node(),
            "kernel": platform.release(),
            "governor": cpu_governor(),
        },
        "python": sys.version.split()[0],
        "cupy_build": cupy_build(),
        "launchbench": __version__,
        "git_commit": git_commit(),
        "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


ENV_ITEMS: tuple[str, ...] = (
    "gpu", "driver", "cuda_runtime", "cupy", "cupy_build", "cuda_bindings", "python", "cpu"
)  # fmt: skip
ENV_LABELS: dict[str, str] = {
    "gpu": "GPU",
    "driver": "driver",
    "cuda_runtime": "CUDA runtime",
    "cupy": "CuPy",
    "cupy_build": "CuPy build",
    "cuda_bindings": "cuda-bindings",
    "python": "Python",
    "cpu": "CPU model",
}
# the items whose change moves the host's launch cost, and so the rows it sets (host-bound rows)
HOST_ITEMS: frozenset[str] = frozenset({"python", "cpu", "cuda_bindings", "cupy", "cupy_build"})
# items recorded only by newer runs: a difference counts only where both runs recorded them
RECENT_ITEMS: frozenset[str] = frozenset({"cupy_build"})
# Where each item sits in a recorded environment (``Environment`` moves older layouts here as it reads them)
_ENV_ITEM: dict[str, Callable[[Environment], object]] = {
    "gpu": lambda env: env.gpu.name,
    "driver": lambda env: env.driver,
    "cuda_runtime": lambda env: env.cuda_runtime,
    "cupy": lambda env: env.cupy,
    "cupy_build": lambda env: env.cupy_build,
    "cuda_bindings": lambda env: env.cuda_bindings,
    "python": lambda env: env.python,
    "cpu": lambda env: env.host.cpu,
}
UNKNOWN = "unknown"


def items_differ(item: str, baseline: Mapping[str, str], current: Mapping[str, str]) -> bool:
    """Whether two environment summaries differ in ``item`` (an item newer runs record only counts
    where both recorded it)."""
    if item in RECENT_ITEMS and UNKNOWN in (baseline[item], current[item]):
        return False
    return baseline[item] != current[item]


def summarize_environment(env: Environment | Mapping[str, Any]) -> dict[str, str]:
    """GPU model, driver, CUDA runtime and CuPy version of an environment ('unknown' where not recorded);
    ``env`` is a recorded environment, a mapping of any layout ``Environment`` reads, or a summary."""
    recorded = Environment.of(env)
    out: dict[str, str] = {}
    for item in ENV_ITEMS:
        value = _ENV_ITEM[item](recorded)
        out[item] = UNKNOWN if value in (None, "") else str(value)
    return out


def describe_environment(env: Environment | Mapping[str, Any], *more: str) -> str:
    """One line naming what a run ran on, e.g. 'NVIDIA H200 (driver 580.159.04, CUDA 13.2, CuPy 14.2.0)';
    ``env`` is a recorded environment or its summary, ``more`` further items for the parentheses."""
    s = summarize_environment(env)
    items = [f"driver {s['driver']}", f"CUDA {s['cuda_runtime']}", f"CuPy {s['cupy']}", *more]
    return f"{s['gpu']} ({', '.join(items)})"
