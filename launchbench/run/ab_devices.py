"""ab --devices: one paired A/B run per GPU, all GPUs at the same time.

Each device runs run.ab.run_ab in a thread of its own (run.devices.on_each_device): A and B interleaved
on that GPU, both sides' workers pinned to the device's own CPU, into ``OUT/devices/<index>/{a,b}``.
The CPUs are chosen before any side starts, from the topology a worker of variant A reports on each
device (its GPU's NUMA node's ``local_cpus``; every device's worker forked from one program server of
the variant): with ``--cpu auto`` every device gets the highest CPU of
its NUMA node that this process may use and no other device has taken (a device whose node has no CPU
left, or whose topology says nothing, takes the highest free CPU of any node); a device never shares its
CPU, since two devices' sides measure at the same time. ``--cpu N,N,...`` names one CPU per device in
the order of the devices; ``--cpu none`` pins nothing. Once every device is done, ``OUT/a`` and
``OUT/b`` are each side's devices merged (results.merge_runs: a ``device`` column)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launchbench.errors import LaunchbenchError
from launchbench.results.merge_runs import SourceRun, merge_runs
from launchbench.results.schema import SCHEMA_VERSION, RunRecord
from launchbench.results.store import create_run_dir, refuse_used_run_dir, write_run
from launchbench.run.ab import Side, Variant, VariantWorkers, run_ab, shown_cpus
from launchbench.run.devices import DEVICES_DIR, local_cpus, on_each_device, resolve_devices
from launchbench.run.executor import WorkerExecutor
from launchbench.run.session import RunEvents, RunOptions


class DeviceCpusError(LaunchbenchError):
    """A --cpu that cannot pin every device's sides to a CPU of its own."""


def probe_variant(workers: VariantWorkers, device: int) -> dict[str, Any]:
    """The environment a worker of ``workers``' variant reports on ``device`` (the worker then ends)."""
    executor = WorkerExecutor(workers.factory, device, spawn=lambda: workers.on(device))
    try:
        return executor.start()
    finally:
        executor.close()


def pinned_devices(
    listed: tuple[int, ...] | None,
    cpu_text: str,
    variant: Variant,
    factory: Callable[[int], Any],
    allowed: frozenset[int],
) -> dict[int, tuple[int, ...]]:
    """The devices to measure on (``listed``, or all: None), each with the CPUs its sides are pinned to
    (``--cpu``, of the CPUs ``allowed``). A CPU list that cannot fit the listed devices is refused before
    any worker starts; each device's topology comes from a worker of ``variant`` on it (device 0's
    first: it says how many devices CUDA shows), every one forked from one program server of the
    variant, so that all devices' probes share one interpreter's imports (CuPy's among them)."""
    if listed is not None and cpu_text not in ("auto", "none"):
        listed_cpus(cpu_text, listed, allowed)
    workers = VariantWorkers(variant, factory, 0)
    try:
        first = probe_variant(workers, 0)
        devices = resolve_devices(listed, first)
        rest = [d for d in devices if d != 0]
        with ThreadPoolExecutor() as pool:
            environments = dict(zip(rest, pool.map(lambda d: probe_variant(workers, d), rest)))
    finally:
        workers.close()
    environments[0] = first
    return device_cpus(cpu_text, devices, environments, allowed)


def auto_cpus(
    devices: Sequence[int], local: Mapping[int, frozenset[int]], allowed: frozenset[int]
) -> dict[int, tuple[int, ...]]:
    """``--cpu auto``: per device the highest free CPU of its NUMA node (``local``), else the highest free
    one of ``allowed``; a DeviceCpusError when the devices outnumber the CPUs."""
    if len(devices) > len(allowed):
        raise DeviceCpusError(
            f"--devices: {len(devices)} devices need a CPU each for their sides' workers; this process "
            f"may use {len(allowed)} ({shown_cpus(allowed)}); give fewer devices or --cpu none"
        )
    free = set(allowed)
    chosen: dict[int, tuple[int, ...]] = {}
    for device in devices:
        near = free & local.get(device, frozenset())
        cpu = max(near or free)
        free.discard(cpu)
        chosen[device] = (cpu,)
    return chosen


def listed_cpus(text: str, devices: Sequence[int], allowed: frozenset[int]) -> dict[int, tuple[int, ...]]:
    """``--cpu N,N,...``: one CPU per device in the devices' order, each one this process may use, no CPU
    twice."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.isdigit() for p in parts) or any(int(p) not in allowed for p in parts):
        raise DeviceCpusError(
            f"--cpu {text}: give auto, none or one CPU per device that this process may use ({shown_cpus(allowed)})"
        )
    if len(parts) != len(devices):
        raise DeviceCpusError(
            f"--cpu {text}: names {len(parts)} CPU(s) for {len(devices)} devices "
            f"({', '.join(map(str, devices))}); give one per device, auto or none"
        )
    if len(set(parts)) != len(parts):
        raise DeviceCpusError(f"--cpu {text}: a CPU is listed twice; each device needs its own")
    return {device: (int(cpu),) for device, cpu in zip(devices, parts)}


def device_cpus(
    text: str, devices: Sequence[int], environments: Mapping[int, dict[str, Any]], allowed: frozenset[int]
) -> dict[int, tuple[int, ...]]:
    """The CPUs each device's sides are pinned to, from ``--cpu`` (auto, none or N,N,...) and each
    device's environment (its GPU's NUMA node)."""
    if text == "none":
        return {device: () for device in devices}
    if text == "auto":
        local = {device: local_cpus(environments[device]) for device in devices}
        return auto_cpus(devices, local, allowed)
    return listed_cpus(text, devices, allowed)


@dataclass(frozen=True)
class DevicePair:
    """One device's paired run: its CPUs and both sides' records (run directories OUT/devices/N/a, b)."""

    device: int
    cpus: tuple[int, ...]
    a: RunRecord
    b: RunRecord

    def run_dirs(self, root: Path) -> tuple[Path, Path]:
        folder = device_dir(root, self.device)
        return folder / "a", folder / "b"


def device_dir(root: Path, device: int) -> Path:
    return root / DEVICES_DIR / str(device)


def device_sides(sides: tuple[Side, Side], root: Path, device: int) -> tuple[Side, Side]:
    """The two sides with their run directories under the device's folder."""
    folder = device_dir(root, device)
    a, b = sides
    return (
        dataclasses.replace(a, run_dir=folder / "a"),
        dataclasses.replace(b, run_dir=folder / "b"),
    )


def run_ab_devices(
    sides: tuple[Side, Side],
    root: Path,
    options: RunOptions,
    cpus: Mapping[int, tuple[int, ...]],
    events_for: Callable[[int], RunEvents],
    argv: Sequence[str] = (),
) -> list[DevicePair]:
    """run_ab on every device of ``cpus`` at once, each pinned to its CPUs; then both merged views."""
    for device in cpus:
        for side in device_sides(sides, root, device):
            refuse_used_run_dir(side.run_dir)
    for name in ("a", "b"):
        refuse_used_run_dir(root / name)

    def measure(device: int, events: RunEvents) -> DevicePair:
        own = dataclasses.replace(options, device=device)
        a, b = run_ab(device_sides(sides, root, device), own, events, argv, cpus[device])
        return DevicePair(device, cpus[device], a, b)

    pairs = on_each_device(list(cpus), measure, events_for)
    write_merged_sides(root, pairs, options, argv)
    return pairs


def write_merged_sides(
    root: Path, pairs: Sequence[DevicePair], options: RunOptions, argv: Sequence[str]
) -> None:
    """OUT/a and OUT/b: each side's runs of every device merged into one run with a device column;
    ``settings.devices`` holds each device's CPUs and its own pair's ab id."""
    for n, name in enumerate(("a", "b")):
        sources = [SourceRun(p.run_dirs(root)[n], (p.a, p.b)[n], SCHEMA_VERSION) for p in pairs]
        merged = merge_runs(sources, argv)
        ab = merged.settings.ab.model_copy(update={"paired_with": str(root / ("b", "a")[n])})
        ab = ab.without("id", "cpus")  # each device's pair has its own
        devices = {
            str(p.device): {"cpus": list(p.cpus), "ab_id": (p.a, p.b)[n].settings.ab.id} for p in pairs
        }
        settings = merged.settings.model_copy(update={"ab": ab, "devices": devices})
        merged = merged.model_copy(update={"settings": settings})
        create_run_dir(root / name)
        write_run(root / name, merged)
        if options.write_tables is not None:
            options.write_tables(root / name, merged)
