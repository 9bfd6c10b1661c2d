"""run --devices: every listed GPU of the host measures the same plan at the same time, one runner (and
its worker processes) per device, each in its own thread of this process.

Each device's run is an ordinary run directory, ``RUN/devices/<index>``; once all have ended they are
merged (results.merge_runs) into ``RUN`` itself, every case marked with its device. Before a device's
runner starts, its thread pins itself to the CPUs local to the GPU's NUMA node (the sysfs
``local_cpulist`` its environment records), intersected with the CPUs this process may use; a thread's
affinity is its own on Linux and the worker processes it starts inherit it. Where the topology says
nothing (no NUMA, no list, no overlap) the workers are not pinned."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from launchbench.errors import LaunchbenchError
from launchbench.results.environment import parse_cpulist
from launchbench.results.merge_runs import SourceRun, merge_runs
from launchbench.results.schema import SCHEMA_VERSION, CaseResult, RunRecord
from launchbench.results.store import create_run_dir, refuse_used_run_dir, write_run
from launchbench.run.executor import WorkerExecutor
from launchbench.run.runner import Plan, run
from launchbench.run.session import RunEvents, RunOptions
from launchbench.scenario.core import Case

DEVICES_DIR = "devices"


class DevicesError(LaunchbenchError):
    """A --devices list that cannot be used."""


def parse_devices(text: str) -> tuple[int, ...] | None:
    """ "all" → None (every device CUDA shows); "0,1,3" → (0, 1, 3)."""
    if text.strip() == "all":
        return None
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        raise DevicesError(f"--devices {text!r}: give all or device indexes such as 0,1,3")
    devices = tuple(int(p) for p in parts)
    if len(set(devices)) != len(devices):
        raise DevicesError(f"--devices {text!r}: a device is listed twice")
    return devices


def probe(factory: Callable[[int], Any], device: int) -> dict[str, Any]:
    """The environment a worker of ``factory`` on ``device`` reports (the worker then ends)."""
    executor = WorkerExecutor(factory, device)
    try:
        return executor.start()
    finally:
        executor.close()


def resolve_devices(devices: tuple[int, ...] | None, first: dict[str, Any]) -> tuple[int, ...]:
    """The devices to measure on: the ones listed, each checked against the count CUDA shows (in
    ``first``, the environment a worker on device 0 reports), or all."""
    count = first.get("device_count")
    if not isinstance(count, int) or count < 1:
        count = 1 if devices is None else max(devices) + 1  # a backend that does not say: trust the list
    if devices is None:
        return tuple(range(count))
    beyond = [d for d in devices if d >= count]
    if beyond:
        raise DevicesError(
            f"--devices: device {beyond[0]} does not exist; CUDA shows {count} (0..{count - 1})"
        )
    return devices


def local_cpus(environment: dict[str, Any]) -> frozenset[int]:
    """The CPUs of the GPU's NUMA node that this process may use (empty: do not pin)."""
    gpu = environment.get("gpu")
    listed = gpu.get("local_cpus") if isinstance(gpu, dict) else None
    if not isinstance(listed, str):
        return frozenset()
    return parse_cpulist(listed) & frozenset(os.sched_getaffinity(0))


class _Stopping(RunEvents):
    """A device's events: forwarded, and an interrupt raised in the device's thread once ``stop`` is set."""

    def __init__(self, inner: RunEvents, stop: threading.Event):
        self.inner, self.stop = inner, stop

    def _check(self) -> None:
        if self.stop.is_set():
            raise KeyboardInterrupt

    def run_started(self, run_dir: Path, cases: Sequence[Case], environment: dict[str, Any]) -> None:
        self.inner.run_started(run_dir, cases, environment)

    def case_started(self, case: Case, index: int, total: int) -> None:
        self._check()
        self.inner.case_started(case, index, total)

    def case_progress(self, fraction: float) -> None:
        self._check()
        self.inner.case_progress(fraction)

    def case_finished(self, result: CaseResult) -> None:
        self.inner.case_finished(result)

    def note(self, message: str) -> None:
        self.inner.note(message)


T = TypeVar("T")


def on_each_device(
    devices: Sequence[int],
    work: Callable[[int, RunEvents], T],
    events_for: Callable[[int], RunEvents],
) -> list[T]:
    """``work(device, events)`` for every device at once, each in a thread of its own; what each returned,
    in the devices' order. The first failure is raised once every thread has ended. An interrupt of the
    main thread makes each device's events raise KeyboardInterrupt in its thread at its next case or
    progress report; it is raised again once every thread has stopped."""
    stop = threading.Event()
    # each thread says when it has ended: a Thread.join interrupted by a signal can leave is_alive() False
    # while the thread still runs (CPython 3.11)
    ended = {d: threading.Event() for d in devices}
    done: dict[int, T] = {}
    failures: dict[int, BaseException] = {}

    def target(device: int) -> None:
        try:
            done[device] = work(device, _Stopping(events_for(device), stop))
        except BaseException as err:  # noqa: BLE001 - handed to the main thread, which raises it
            failures[device] = err
        finally:
            ended[device].set()

    threads = [threading.Thread(target=target, args=(d,), name=f"launchbench-device-{d}") for d in devices]
    for thread in threads:
        thread.start()
    try:
        for event in ended.values():
            while not event.wait(0.5):
                pass
    except KeyboardInterrupt:
        stop.set()
        for event in ended.values():
            event.wait()
        raise
    finally:
        for thread in threads:
            thread.join()
    failure = next((failures[d] for d in devices if d in failures), None)
    if failure is not None:
        raise failure
    return [done[d] for d in devices]


@dataclass(frozen=True)
class DeviceRun:
    """One device's part: its run directory, the CPUs its workers were pinned to, and its record."""

    device: int
    run_dir: Path
    cpus: frozenset[int]
    record: RunRecord


def _measure(
    device: int,
    run_dir: Path,
    the_plan: Plan,
    options: RunOptions,
    events: RunEvents,
    argv: Sequence[str],
) -> DeviceRun:
    cpus = local_cpus(probe(options.backend_factory, device))
    if cpus:
        os.sched_setaffinity(0, cpus)  # this thread; the workers it starts inherit it
    record = run(the_plan, run_dir, dataclasses.replace(options, device=device), events, argv=argv)
    return DeviceRun(device, run_dir, cpus, record)


def run_devices(
    the_plan: Plan,
    run_dir: Path,
    options: RunOptions,
    devices: Sequence[int],
    events_for: Callable[[int], RunEvents],
    argv: Sequence[str] = (),
) -> tuple[RunRecord, list[DeviceRun]]:
    """Measure the plan on every device at once; the merged record (written to ``run_dir``) and the parts."""
    refuse_used_run_dir(run_dir)
    create_run_dir(run_dir)
    parts = on_each_device(
        devices,
        lambda d, events: _measure(d, run_dir / DEVICES_DIR / str(d), the_plan, options, events, argv),
        events_for,
    )
    sources = [SourceRun(p.run_dir, p.record, SCHEMA_VERSION) for p in parts]
    merged = merge_runs(sources, argv)
    merged = merged.model_copy(
        update={"settings": {**merged.settings, "devices": {str(p.device): sorted(p.cpus) for p in parts}}}
    )
    write_run(run_dir, merged)
    if options.write_tables is not None:
        options.write_tables(run_dir, merged)
    return merged, parts
