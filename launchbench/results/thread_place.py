"""Where the calling thread runs (Linux): its CPU number, that CPU's frequency, governor, NUMA node and
SMT siblings, and the NUMA node of a PCI device (the GPU). Each reader takes the filesystem root, so a
test can point it at a fake /proc and /sys tree; what cannot be read is None, never an error."""

from __future__ import annotations

import re
from pathlib import Path

from launchbench.results.schema import ThreadPlace

ROOT = Path("/")
PROCESSOR_FIELD = 39  # /proc/[pid]/stat: "CPU number last executed on" (proc(5))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except (OSError, ValueError):
        return None


def current_cpu(root: Path = ROOT) -> int | None:
    """The CPU the calling thread last ran on: field 39 of /proc/thread-self/stat (the fields after the
    command name, which is in parentheses and may hold spaces)."""
    text = _read(root / "proc" / "thread-self" / "stat")
    if text is None or ")" not in text:
        return None
    fields = text.rpartition(")")[2].split()  # field 3 (state) onwards
    index = PROCESSOR_FIELD - 3
    if len(fields) <= index or not fields[index].isdigit():
        return None
    return int(fields[index])


def _cpu_dir(root: Path, cpu: int) -> Path:
    return root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}"


def cpu_mhz(cpu: int, root: Path = ROOT) -> float | None:
    """The CPU's current frequency: cpufreq's scaling_cur_freq (kHz), else /proc/cpuinfo's "cpu MHz"."""
    khz = _read(_cpu_dir(root, cpu) / "cpufreq" / "scaling_cur_freq")
    if khz is not None and khz.isdigit() and int(khz) > 0:
        return int(khz) / 1000
    info = _read(root / "proc" / "cpuinfo")
    if info is None:
        return None
    for block in info.split("\n\n"):
        number = re.search(r"^processor\s*:\s*(\d+)", block, re.MULTILINE)
        mhz = re.search(r"^cpu MHz\s*:\s*([0-9.]+)", block, re.MULTILINE)
        if number and mhz and int(number.group(1)) == cpu:
            value = float(mhz.group(1))
            return value if value > 0 else None
    return None


def cpu_node(cpu: int, root: Path = ROOT) -> int | None:
    """The CPU's NUMA node: the nodeN entry in its sysfs directory."""
    try:
        nodes = [p.name for p in _cpu_dir(root, cpu).iterdir() if re.fullmatch(r"node\d+", p.name)]
    except OSError:
        return None
    return int(nodes[0][4:]) if len(nodes) == 1 else None


def thread_place(root: Path = ROOT) -> ThreadPlace:
    """Where the calling thread runs now."""
    cpu = current_cpu(root)
    if cpu is None:
        return ThreadPlace()
    governor = _read(_cpu_dir(root, cpu) / "cpufreq" / "scaling_governor")
    siblings = _read(_cpu_dir(root, cpu) / "topology" / "thread_siblings_list")
    return ThreadPlace(
        cpu=cpu,
        mhz=cpu_mhz(cpu, root),
        governor=governor or None,
        node=cpu_node(cpu, root),
        siblings=siblings or None,
    )


def sysfs_pci_address(bus_id: str) -> str | None:
    """A PCI bus id as sysfs names its device directory: lower case, a 4-digit domain
    ("00000000:19:00.0" as NVML writes it → "0000:19:00.0"); None when it is not one."""
    match = re.fullmatch(r"([0-9a-f]{4,8}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])", bus_id.strip().lower())
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain, 16):04x}:{bus}:{device}.{function}"


def pci_node(bus_id: str | None, root: Path = ROOT) -> int | None:
    """The NUMA node of a PCI device (/sys/bus/pci/devices/ADDRESS/numa_node; -1 there means none)."""
    address = sysfs_pci_address(bus_id) if bus_id else None
    if address is None:
        return None
    text = _read(root / "sys" / "bus" / "pci" / "devices" / address / "numa_node")
    return int(text) if text is not None and text.isdigit() else None
