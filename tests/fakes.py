"""Test doubles (never inside the product): a stepping clock and a scripted backend whose workloads
advance that clock by scripted amounts, so the sampling loop, stopping rules, runner and worker run on
a machine with no GPU."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from launchbench.backend.base import CaseRefused, OutputCheck, RankInfo
from launchbench.measure.clock import ClockReading
from launchbench.measure.sampler import BatchTiming
from launchbench.results.schema import CanaryReading, GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case

DEVICES_VARIABLE = "LAUNCHBENCH_TEST_DEVICES"  # the scripted backend's device count, where a test sets it


class SteppingClock:
    """Time moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cpu = 0.0

    def wall(self) -> float:
        return self.now

    def thread(self) -> float:
        return self.cpu

    def advance(self, wall: float, cpu: float | None = None) -> None:
        self.now += wall
        self.cpu += wall if cpu is None else cpu


@dataclass
class ScriptedWorkload:
    """Per-iteration times drawn from a seeded distribution: `per_iter` × (1 + noise·N(0,1))."""

    clock: SteppingClock
    launches_per_iter: int
    per_iter: float
    noise: float = 0.0
    cpu_share: float = 1.0
    latency_extra: float = 5e-6
    seed: int = 0
    drift: float = 0.0  # relative change of per_iter per second of clock time (to test interleaving)
    batches: list[int] = field(default_factory=list)
    iters_multiple: int = 1

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def _one(self) -> float:
        return self._many(1)[0]

    def _many(self, count: int) -> list[float]:
        """``count`` per-iteration times drawn at once (the clock stands still between them): the same
        normals in the same order, and the same values, as ``count`` draws of one."""
        base = self.per_iter * (1 + self.drift * self.clock.now)
        drawn = base * (1 + self.noise * self.rng.standard_normal(count))
        return np.maximum(drawn, base * 0.1).tolist()

    def run_batch(self, iters: int) -> BatchTiming:
        self.batches.append(iters)
        total = sum(self._many(min(iters, 50))) * (iters / min(iters, 50))
        self.clock.advance(total, total * self.cpu_share)
        return BatchTiming(iters, total, total * self.cpu_share, total)

    def run_latency(self) -> float:
        value = self._one() + self.latency_extra
        self.clock.advance(value)
        return value


class ScriptedMonitor:
    def __init__(self, readings: list[ClockReading]):
        self.readings = readings
        self.index = 0

    def read(self) -> ClockReading:
        reading = self.readings[min(self.index, len(self.readings) - 1)]
        self.index += 1
        return reading


class SocketControl:
    """RankControl for scripted ranks in separate worker processes: rank 0 listens on a Unix socket
    whose path is the case's "unique id", the other ranks connect to it."""

    def __init__(self, path: str, rank: int, world: int):
        from multiprocessing.connection import Client, Listener

        self.rank = rank
        if rank == 0:
            listener = Listener(path, family="AF_UNIX")
            self.peers = [listener.accept() for _ in range(world - 1)]
            listener.close()
            return
        deadline = time.monotonic() + 60
        while True:
            try:
                self.leader = Client(path, family="AF_UNIX")
                return
            except (FileNotFoundError, ConnectionRefusedError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def exchange(self, command: tuple[int, int, int] | None) -> tuple[int, int, int]:
        if self.rank == 0:
            assert command is not None
            for peer in self.peers:
                peer.send(command)
            return command
        return tuple(self.leader.recv())  # type: ignore[return-value]

    def common(self, flags: list[int]) -> list[int]:
        if self.rank == 0:
            every = [flags] + [peer.recv() for peer in self.peers]
            result = [min(values) for values in zip(*every)]
            for peer in self.peers:
                peer.send(result)
            return result
        self.leader.send(flags)
        return list(self.leader.recv())


class ScriptedPreparedCase:
    def __init__(
        self,
        case: Case,
        clock: SteppingClock,
        eager_per_launch: float,
        graph_per_launch: float,
        noise: float,
        ranks: RankInfo | None = None,
    ):
        self.case = case
        self.control = None if ranks is None else SocketControl(ranks.unique_id, ranks.rank, ranks.world)
        if ranks is not None:  # every rank a little slower than the one before
            eager_per_launch *= 1 + 0.05 * ranks.rank
            graph_per_launch *= 1 + 0.05 * ranks.rank
        n = case.launches_per_iter
        self.workloads: dict[str, Any] = {
            "eager": ScriptedWorkload(clock, n, eager_per_launch * n, noise, seed=1)
        }
        self.lifecycle: GraphLifecycle | None = None
        self.graph_failure: str | None = None
        kinds = {step.kind for step in case.steps}
        functions = {getattr(step, "function", "") for step in case.steps}
        if "crash" in functions:
            os._exit(7)  # a worker dying mid-case, as a CUDA fault can make it
        if "oob" in functions:
            raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")
        if "reduction" in kinds:
            self.graph_failure = "NotImplementedError: scripted capture refusal"
        else:
            self.workloads["graph"] = ScriptedWorkload(
                clock, n, graph_per_launch * n + 1.5e-6, noise / 5, cpu_share=0.01, seed=2
            )
            self.lifecycle = GraphLifecycle(
                split=True,
                capture_s=3e-6 * n,
                instantiate_s=4e-6 * n,
                upload_s=1e-6 * n,
                first_launch_s=1e-5,
                nodes=n,
                mem_bytes=0,
                instantiate_upload_s=4.5e-6 * n,
                instantiate_then_upload_s=5e-6 * n,
            )

    def check_outputs(self) -> OutputCheck:
        if self.graph_failure:
            return OutputCheck(None, "no graph")
        return OutputCheck(True, "scripted: identical")

    def shape_counts(self) -> dict[str, ShapeCounts]:
        return {}

    def harness_cost(self) -> float:
        return 5e-8

    def close(self) -> None:
        return None


# Scripted costs of a shape-changing case (seconds): a graph strategy's host pays SHAPE_HOST per iteration
# and its cost per change; the GPU needs the graph's replay time; the slower of the two paces the iterations.
# Eager's host pays the eager launches; it pays nothing at a change.
SHAPE_CHANGE_COST = {"eager": 0.0, "recapture": 8e-6, "cache": 0.2e-6, "update": 3e-6}  # per launch
SHAPE_HOST = 0.3e-6
SHAPE_REFUSALS = "cudaGraphExecUpdateErrorTopologyChanged"


class ScriptedShapeCase:
    """A shape-changing case on the scripted clock: per mode, time per iteration = max(GPU time, host time
    + SHAPE_CHANGE_COST per change / iterations per shape) (a cache that holds fewer graphs than there are
    shapes misses every change and pays what recapture pays); counts as a real run would make them. A
    chain with a step labelled ``refuse`` has every update refused (re-captured, counted)."""

    def __init__(self, case: Case, clock: SteppingClock, eager_per_launch: float, graph_per_launch: float):
        plan = case.shapes
        assert plan is not None
        self.case, self.plan = case, plan
        n = case.launches_per_iter
        self.refuse = any(step.label == "refuse" for step in case.steps)
        self.change_s: dict[str, float] = {}
        self.workloads: dict[str, Any] = {}
        gpu = graph_per_launch * n + 1.5e-6
        for seed, mode in enumerate(("eager", *plan.strategies), start=1):
            change = self._change_cost(mode) * n
            host = (eager_per_launch * n if mode == "eager" else SHAPE_HOST) + change / plan.per_shape
            wall = max(gpu, host)
            self.change_s[mode] = change
            self.workloads[mode] = ScriptedWorkload(
                clock,
                n,
                wall,
                0.02 if mode == "eager" else 0.004,
                cpu_share=host / wall,
                seed=seed,
                iters_multiple=plan.per_shape,
            )
        self.lifecycle: GraphLifecycle | None = None
        self.graph_failure: str | None = None

    def _change_cost(self, mode: str) -> float:
        if mode == "cache" and (self.plan.cache_limit or self.plan.distinct) < self.plan.distinct:
            return SHAPE_CHANGE_COST["recapture"]
        if mode == "update" and self.refuse:
            return SHAPE_CHANGE_COST["recapture"] + SHAPE_CHANGE_COST["update"]
        return SHAPE_CHANGE_COST[mode]

    def shape_counts(self) -> dict[str, ShapeCounts]:
        counts = {}
        for mode, workload in self.workloads.items():
            iterations = sum(workload.batches)
            changes = iterations // self.plan.per_shape
            thrash = mode == "cache" and (self.plan.cache_limit or self.plan.distinct) < self.plan.distinct
            counts[mode] = ShapeCounts(
                iterations=iterations,
                changes=changes,
                setup_s=changes * self.change_s[mode],
                updates=changes if mode == "update" and not self.refuse else 0,
                update_refusals=changes if mode == "update" and self.refuse else 0,
                recaptures=changes
                if mode == "recapture" or (mode == "cache" and thrash) or (mode == "update" and self.refuse)
                else 0,
                cache_hits=changes if mode == "cache" and not thrash else 0,
                cache_misses=changes if mode == "cache" and thrash else 0,
                refusal_reasons={SHAPE_REFUSALS: changes}
                if mode == "update" and self.refuse and changes
                else {},
            )
        return counts

    def check_outputs(self) -> OutputCheck:
        modes = [m for m in self.workloads if m != "eager"]
        if any(step.label == "mismatch" for step in self.case.steps):
            return OutputCheck(False, "update: graph output differs from eager: scripted", ("update",))
        return OutputCheck(
            True, f"{', '.join(modes)} equal eager over every one of {self.plan.distinct} shapes"
        )

    def harness_cost(self) -> float:
        return 5e-8

    def drop_graph(self, reason: str) -> None:
        self.workloads.pop("graph", None)
        self.lifecycle = None
        self.graph_failure = reason

    def close(self) -> None:
        return None


class ScriptedBackend:
    def __init__(
        self,
        clock: SteppingClock | None = None,
        eager_per_launch: float = 6.5e-6,
        graph_per_launch: float = 0.5e-6,
        noise: float = 0.02,
    ):
        self.clock = clock or SteppingClock()
        self.monitor = None
        self.pci_address: str | None = None
        self.eager_per_launch = eager_per_launch
        self.graph_per_launch = graph_per_launch
        self.noise = noise
        self.prepared_ids: list[str] = []

    def environment(self) -> dict[str, Any]:
        env: dict[str, Any] = {
            "gpu": {"name": "Scripted GPU", "uuid": "GPU-scripted", "index": 0},
            "driver": "0",
            "cupy": "none",
            "cuda_runtime": "0",
        }
        if DEVICES_VARIABLE in os.environ:
            env["device_count"] = int(os.environ[DEVICES_VARIABLE])
        return env

    def canary(self) -> CanaryReading:
        """The reference, 35% slower on the graph side once the case $LAUNCHBENCH_TEST_CANARY_DISTURB (a
        case id) was prepared in this backend: a disturbance put in on purpose."""
        factor = 1.35 if os.environ.get(CANARY_DISTURB_VARIABLE) in self.prepared_ids else 1.0
        return CanaryReading(graph_s_per_node=0.5e-6 * factor, eager_s_per_launch=5e-6)

    def nccl_unique_id(self) -> str:
        """A socket path for the ranks' SocketControl."""
        return os.path.join(tempfile.gettempdir(), f"lb-ranks-{os.getpid()}-{uuid.uuid4().hex[:8]}.sock")

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> ScriptedPreparedCase | ScriptedShapeCase:
        self.prepared_ids.append(case.case_id)
        if any(getattr(step, "size", 0) > 10**10 for step in case.steps):
            raise CaseRefused(
                "case needs 4000.00 GiB of GPU memory for its buffers; 140.00 GiB of 140.00 GiB is free"
            )
        if case.shapes is not None:
            return ScriptedShapeCase(case, self.clock, self.eager_per_launch, self.graph_per_launch)
        return ScriptedPreparedCase(
            case, self.clock, self.eager_per_launch, self.graph_per_launch, self.noise, ranks
        )


def scripted_backend(device: int) -> ScriptedBackend:
    """A picklable backend factory for worker-process tests."""
    return ScriptedBackend()


def no_gpu_backend(device: int) -> ScriptedBackend:
    """A backend that cannot start, as the CuPy backend on a machine without a GPU."""
    from launchbench.errors import NoGpuError

    raise NoGpuError(f"no CUDA device {device} (a scripted refusal)")


def slow_graph_backend(device: int) -> ScriptedBackend:
    """The scripted backend with graphs twice as slow per launch: a regression put in on purpose."""
    return ScriptedBackend(graph_per_launch=1.0e-6)


TEARDOWN_FILE_VARIABLE = "LAUNCHBENCH_TEST_TEARDOWN"


def teardown_marking_backend(device: int) -> ScriptedBackend:
    """The scripted backend in a process whose interpreter teardown (its atexit handlers) appends that
    process's id to the file TEARDOWN_FILE_VARIABLE names: a test can tell whether a worker ran it."""
    import atexit

    def mark() -> None:
        with open(os.environ[TEARDOWN_FILE_VARIABLE], "a") as marks:
            marks.write(f"{os.getpid()}\n")

    atexit.register(mark)
    return ScriptedBackend()


STARTS_FILE_VARIABLE = "LAUNCHBENCH_TEST_WORKER_STARTS"
CANARY_DISTURB_VARIABLE = "LAUNCHBENCH_TEST_CANARY_DISTURB"


def counting_backend(device: int) -> ScriptedBackend:
    """A scripted backend that appends its process id to the file named by STARTS_FILE_VARIABLE, so a
    test can count the worker processes a run started."""
    import os

    with open(os.environ[STARTS_FILE_VARIABLE], "a") as starts:
        starts.write(f"{os.getpid()}\n")
    return ScriptedBackend()


SLOW_WORKERS_VARIABLE = "LAUNCHBENCH_TEST_SLOW_WORKERS"  # e.g. "1,3,5": which worker starts launch slower
SLOW_FACTOR = 1.3


def levels_backend(device: int) -> ScriptedBackend:
    """A scripted backend at one of two host levels: the n-th worker process to start (counted in the
    file named by STARTS_FILE_VARIABLE, from 0) launches eager kernels SLOW_FACTOR times slower when n is
    in SLOW_WORKERS_VARIABLE (by default every odd one: one process in two)."""
    with open(os.environ[STARTS_FILE_VARIABLE], "a+") as starts:
        starts.seek(0)
        count = len(starts.read().split())
        starts.write(f"{os.getpid()}\n")
    listed = os.environ.get(SLOW_WORKERS_VARIABLE)
    slow = count in {int(n) for n in listed.split(",")} if listed else count % 2 == 1
    return ScriptedBackend(eager_per_launch=6.5e-6 * (SLOW_FACTOR if slow else 1.0), noise=0.005)


ORDER_FILE_VARIABLE = "LAUNCHBENCH_TEST_ORDER"
SIDE_VARIABLE = "LAUNCHBENCH_TEST_SIDE"
SLOWDOWN_VARIABLE = "LAUNCHBENCH_TEST_SLOWDOWN"
SAMPLES_FILE_VARIABLE = "LAUNCHBENCH_TEST_SAMPLES"  # RecordingBackend logs every eager latency sample here


class RecordingBackend(ScriptedBackend):
    """A scripted backend that appends "SIDE CASE" to the file named by ORDER_FILE_VARIABLE for every
    case it prepares (SIDE from SIDE_VARIABLE), so a test can read the order an ab run measured in; its
    eager launches cost 1 + SLOWDOWN_VARIABLE times the usual."""

    def prepare(self, case: Case) -> ScriptedPreparedCase:
        side = os.environ.get(SIDE_VARIABLE, "?")
        with open(os.environ[ORDER_FILE_VARIABLE], "a") as order:
            order.write(f"{side} {case.case_id}\n")
        prepared = super().prepare(case)
        samples_file = os.environ.get(SAMPLES_FILE_VARIABLE)
        if samples_file:
            eager = prepared.workloads["eager"]
            measure_latency = eager.run_latency

            def run_latency() -> float:  # one line per latency sample: the order samples were taken in
                with open(samples_file, "a") as samples:
                    samples.write(f"{side} {case.case_id}\n")
                return measure_latency()

            eager.run_latency = run_latency
        return prepared


def recording_backend(device: int) -> RecordingBackend:
    """A picklable factory of RecordingBackend (a worker started as a program imports it by name)."""
    slowdown = float(os.environ.get(SLOWDOWN_VARIABLE, "0"))
    return RecordingBackend(eager_per_launch=6.5e-6 * (1 + slowdown), noise=0.02)


NODE_VARIABLE = "LAUNCHBENCH_TEST_NODE"  # the host name the fleet backend reports
SLOW_NODE_VARIABLE = "LAUNCHBENCH_TEST_SLOW_NODE"  # the node whose launches cost SLOW_NODE_FACTOR as much
SLOW_NODE_FACTOR = 1.5
TASK_VARIABLES = ("LAUNCHBENCH_FLEET_TASK", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX")
LOCAL_CPUS_VARIABLE = "LAUNCHBENCH_TEST_LOCAL_CPUS"  # the cpulist the fleet backend's GPU is local to
# (";"-separated: device d's is item d modulo their number, e.g. "0-3;4-7" for two NUMA nodes)
GPU_NAME_VARIABLE = "LAUNCHBENCH_TEST_GPU_NAME"


def fleet_node() -> str:
    """The node a fleet backend pretends to run on: NODE_VARIABLE, else node<task index> from the
    launcher's task variables (a one-node Slurm cluster's tasks become nodes of their own), else node0."""
    if os.environ.get(NODE_VARIABLE):
        return os.environ[NODE_VARIABLE]
    task = next((os.environ[v] for v in TASK_VARIABLES if os.environ.get(v)), "0")
    return f"node{task}"


class FleetBackend(ScriptedBackend):
    """A scripted backend on a pretend node of a fleet: its host name and environment name the node, and
    the node named by SLOW_NODE_VARIABLE does extra host work per launch (SLOW_NODE_FACTOR the eager cost,
    its CPU governor powersave where the others' is performance)."""

    def __init__(self, device: int):
        self.node = fleet_node()
        self.slow = os.environ.get(SLOW_NODE_VARIABLE) == self.node
        self.device = device
        factor = SLOW_NODE_FACTOR if self.slow else 1.0
        super().__init__(eager_per_launch=6.5e-6 * factor, graph_per_launch=0.5e-6, noise=0.02)

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env["gpu"] = {
            "name": os.environ.get(GPU_NAME_VARIABLE, "Scripted GPU"),
            "uuid": f"GPU-{self.node}-{self.device}",
            "index": self.device,
            "numa_node": 0,
            "local_cpus": _fleet_local_cpus(self.device),
        }
        env["worker_cpus"] = sorted(os.sched_getaffinity(0))  # where the worker runs: a test reads it
        env["host"] = {
            "hostname": self.node,
            "cpu": "Scripted CPU",
            "kernel": "6.1.0-scripted",
            "governor": "powersave" if self.slow else "performance",
        }
        return env


def _fleet_local_cpus(device: int) -> str:
    lists = os.environ.get(LOCAL_CPUS_VARIABLE, f"0-{(os.cpu_count() or 1) - 1}").split(";")
    return lists[device % len(lists)]


def fleet_backend(device: int) -> FleetBackend:
    """The fleet backend's factory (``--backend fakes:fleet_backend`` with tests/ on PYTHONPATH)."""
    return FleetBackend(device)


SLOW_DEVICE_VARIABLE = "LAUNCHBENCH_TEST_SLOW_DEVICE"  # with SLOWDOWN_VARIABLE: the one device it slows


class DeviceRecordingBackend(FleetBackend):
    """A fleet backend on one device of a host that appends "DEVICE SIDE CASE" to the file named by
    ORDER_FILE_VARIABLE for every case it prepares (SIDE from SIDE_VARIABLE); its eager launches cost 1 +
    SLOWDOWN_VARIABLE times the usual on the device SLOW_DEVICE_VARIABLE names (on every device when it
    is unset)."""

    def __init__(self, device: int):
        super().__init__(device)
        slow = os.environ.get(SLOW_DEVICE_VARIABLE)
        if slow is None or int(slow) == device:
            self.eager_per_launch *= 1 + float(os.environ.get(SLOWDOWN_VARIABLE, "0"))

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> ScriptedPreparedCase | ScriptedShapeCase:
        side = os.environ.get(SIDE_VARIABLE, "?")
        with open(os.environ[ORDER_FILE_VARIABLE], "a") as order:
            order.write(f"{self.device} {side} {case.case_id}\n")
        return super().prepare(case, ranks)


def device_recording_backend(device: int) -> DeviceRecordingBackend:
    """DeviceRecordingBackend's factory (``--backend fakes:device_recording_backend``)."""
    return DeviceRecordingBackend(device)


class HarnessCountingBackend(ScriptedBackend):
    """A scripted backend whose harness cost is HARNESS_STEP times the number of times a case in this
    process has measured it, so a result's ``harness_s_per_iter`` says which measurement it carries."""

    HARNESS_STEP = 1e-8

    def __init__(self) -> None:
        super().__init__()
        self.harness_measured = 0

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> ScriptedPreparedCase | ScriptedShapeCase:
        prepared = super().prepare(case, ranks)

        def harness_cost() -> float:
            self.harness_measured += 1
            return self.HARNESS_STEP * self.harness_measured

        prepared.harness_cost = harness_cost  # type: ignore[method-assign]
        return prepared


def harness_counting_backend(device: int) -> HarnessCountingBackend:
    """HarnessCountingBackend's factory (picklable, for a spawned worker)."""
    return HarnessCountingBackend()


STATE_VARIABLE = "LAUNCHBENCH_TEST_STATE"  # read by StateReportingBackend as its worker starts


class StateReportingBackend(ScriptedBackend):
    """A scripted backend whose environment says what its worker process began with: STATE_VARIABLE,
    the working directory, the first import path, the CPUs it may run on, its parent process and whether
    it holds the fork server's prelude (imported before the fork, never by a worker itself)."""

    def __init__(self, preloaded: bool):
        super().__init__()
        self.preloaded = preloaded

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env["state"] = {
            "mark": os.environ.get(STATE_VARIABLE),
            "cwd": os.getcwd(),
            "path0": sys.path[0],
            "cpus": sorted(os.sched_getaffinity(0)),
            "parent_pid": os.getppid(),
            "preloaded": self.preloaded,
        }
        return env


def state_reporting_backend(device: int) -> StateReportingBackend:
    """StateReportingBackend's factory."""
    return StateReportingBackend("launchbench.run.fork_prelude" in sys.modules)


class ProcessReportingBackend(ScriptedBackend):
    """A scripted backend whose environment names the worker's process: its pid, its parent's, its
    environment variables and CPUs (a test of how a worker was started reads them)."""

    def environment(self) -> dict[str, Any]:
        env = super().environment()
        env["process"] = {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "environ": dict(os.environ),
            "cpus": sorted(os.sched_getaffinity(0)),
            "modules": sorted(m for m in ("numpy", "launchbench.run.execute") if m in sys.modules),
        }
        return env


def process_reporting_backend(device: int) -> ProcessReportingBackend:
    return ProcessReportingBackend()
