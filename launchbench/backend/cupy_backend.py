"""The CuPy backend: builds a case's buffers and launch calls, captures the graph, times both modes
and checks the graph's outputs against eager ones."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import cupy
import numpy as np

from launchbench.backend.base import CaseRefused, OutputCheck, RankInfo
from launchbench.backend.canary import ReferenceCanary
from launchbench.backend.check import compare_outputs, compare_reference
from launchbench.backend.gpu_probe import collect_environment
from launchbench.backend.graph import CaptureFailed, capture
from launchbench.backend.graph_shape import GraphShape, to_dot
from launchbench.backend.graph_shape import walk as walk_graph
from launchbench.backend.nccl_ranks import NcclControl, communicator, unique_id
from launchbench.backend.nvml import NvmlMonitor
from launchbench.backend.step_builder import StepBuilder
from launchbench.backend.workload import LaunchLoop
from launchbench.errors import LaunchbenchError
from launchbench.kinds.base import BuiltStep
from launchbench.kinds.empty import EMPTY_SOURCE
from launchbench.kinds.registry import step_bytes
from launchbench.kinds.torch_step import holds_torch
from launchbench.measure.clock import Clock
from launchbench.results.schema import CanaryReading, GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case

MEMORY_HEADROOM = 0.9  # refuse a case whose buffers would take more than this share of free memory
HARNESS_ITERS = 20_000


def _noop() -> None:
    return None


def fork_join(
    main: cupy.cuda.Stream, aux: Sequence[cupy.cuda.Stream], calls: Sequence[Callable[[], Any]]
) -> list[Callable[[], Any]]:
    """One iteration over several streams: the main stream records a fork event that every auxiliary
    stream waits on, the steps run in chain order (each bound to its stream), then every auxiliary
    stream records a join event that the main stream waits on. Captured on the main stream, this gives
    a graph with a branch per stream; eagerly, the main stream's timing events cover all the work."""
    fork = cupy.cuda.Event(disable_timing=True)
    joins = [cupy.cuda.Event(disable_timing=True) for _ in aux]
    head: list[Callable[[], Any]] = [partial(fork.record, main)]
    head += [partial(stream.wait_event, fork) for stream in aux]
    tail: list[Callable[[], Any]] = [partial(join.record, stream) for join, stream in zip(joins, aux)]
    tail += [partial(main.wait_event, join) for join in joins]
    return head + list(calls) + tail


StreamSource = Callable[[int], cupy.cuda.Stream]


def harness_cost(stream: cupy.cuda.Stream, clock: Clock, max_in_flight: int) -> float:
    """Seconds per iteration that the timing loop costs around an empty call (median of 5 batches)."""
    loop = LaunchLoop([_noop], 1, stream, clock, max_in_flight)
    costs = []
    for _ in range(5):
        timing = loop.run_batch(HARNESS_ITERS)
        costs.append(timing.wall_s / HARNESS_ITERS)
    return float(np.median(costs))


def reset_steps(stream: cupy.cuda.Stream, steps: Sequence[BuiltStep]) -> None:
    """Every step's outputs back to their initial contents (on ``stream``, then waited for)."""
    with stream:
        for built in steps:
            built.reset()
    stream.synchronize()


def snapshot_steps(stream: cupy.cuda.Stream, steps: Sequence[BuiltStep]) -> dict[str, np.ndarray]:
    """A host copy of every step's outputs, once ``stream`` is done."""
    stream.synchronize()
    return {
        name: cupy.asnumpy(array)
        if isinstance(array, cupy.ndarray)
        else np.array(array, copy=True)  # host: a copy
        for built in steps
        for name, array in built.outputs.items()
    }


class CupyPreparedCase:
    def __init__(self, case: Case, clock: Clock, streams: StreamSource, ranks: RankInfo | None = None):
        self.case = case
        self.clock = clock
        self.comm: Any = None
        self.control: NcclControl | None = None
        needed = sum(step_bytes(step) for step in case.steps)
        free, total = cupy.cuda.runtime.memGetInfo()
        if needed > MEMORY_HEADROOM * free:
            raise CaseRefused(
                f"case needs {needed / 2**30:.2f} GiB of GPU memory for its buffers; "
                f"{free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free"
            )
        self.stream = streams(0)
        aux_ids = sorted({step.stream for step in case.steps if getattr(step, "stream", 0)})
        self.aux_streams = {index: streams(index) for index in aux_ids}
        if ranks is not None:
            self.comm = communicator(ranks)  # every rank builds, warms and captures in the same order
            self.control = NcclControl(self.comm, self.stream, ranks.rank)
        builder = StepBuilder(
            self.stream,
            streams=self.aux_streams,
            source=case.source,
            rank=ranks.rank if ranks else 0,
            world=ranks.world if ranks else 1,
            communicator=self.comm,
        )
        with self.stream:
            self.steps: list[BuiltStep] = [builder.build(step, i) for i, step in enumerate(case.steps)]
        self.calls = [call for built in self.steps for call in built.calls]
        if self.aux_streams:
            cupy.cuda.Device().synchronize()  # initial contents written on any stream are in place
            self.calls = fork_join(self.stream, list(self.aux_streams.values()), self.calls)
        launches = case.launches_per_iter
        max_in_flight = case.measure.max_in_flight
        self.eager = LaunchLoop(self.calls, launches, self.stream, clock, max_in_flight)
        self.eager.run_batch(1)  # compile and load every kernel before anything is timed or captured
        self.workloads: dict[str, Any] = {"eager": self.eager}
        self.lifecycle: GraphLifecycle | None = None
        self.captured = None
        self.graph_failure: str | None = next((b.graph_refusal for b in self.steps if b.graph_refusal), None)
        try:
            if self.graph_failure is None:
                self.captured = capture(self.stream, self.calls, clock)
        except CaptureFailed as err:
            self.graph_failure = str(err)
        if self.captured is not None:
            self.lifecycle = self.captured.lifecycle
            graph_call = self.captured.launch_call(self.stream)
            self.workloads["graph"] = LaunchLoop([graph_call], launches, self.stream, clock, max_in_flight)

    def check_outputs(self) -> OutputCheck:
        if self.captured is None:
            return self._check_eager_only()
        reset_steps(self.stream, self.steps)
        initial = snapshot_steps(self.stream, self.steps)
        if not initial:
            return OutputCheck(None, "the chain writes no buffer; graph node count checked instead")
        self.eager.run_batch(1)
        eager = snapshot_steps(self.stream, self.steps)
        reset_steps(self.stream, self.steps)
        self.workloads["graph"].run_batch(1)
        graph = snapshot_steps(self.stream, self.steps)
        check = compare_outputs(initial, eager, graph)
        host = compare_reference(self._references(), eager)
        if host is None or check.match is False:
            return check
        if host.match is False:
            return host
        return OutputCheck(True, f"{check.detail}; {host.detail}")

    def _check_eager_only(self) -> OutputCheck:
        """No graph: eager's outputs against the host reference, where a kind gives one."""
        no_graph = f"no graph to compare ({self.graph_failure})"
        references = self._references()
        if not references:
            return OutputCheck(None, no_graph)
        reset_steps(self.stream, self.steps)
        self.eager.run_batch(1)
        host = compare_reference(references, snapshot_steps(self.stream, self.steps))
        assert host is not None
        return host if host.match is False else OutputCheck(None, f"{no_graph}; eager: {host.detail}")

    def _references(self) -> dict[str, np.ndarray]:
        """The host-computed outputs of the steps whose kind gives them."""
        return {
            name: value
            for built in self.steps
            if built.reference is not None
            for name, value in built.reference().items()
        }

    def graph_shape(self) -> GraphShape | None:
        """The captured graph's nodes and edges, conditional bodies included (read through
        cuda-bindings); None without cuda-bindings or a raw graph handle."""
        if self.captured is None:
            raise LaunchbenchError(f"case {self.case.case_id} could not be captured: {self.graph_failure}")
        handle = getattr(self.captured.graph, "graph", 0)
        if not handle:
            return None
        try:
            return walk_graph(handle)
        except ImportError:
            return None

    def graph_dot(self) -> str:
        """The captured graph in Graphviz DOT: drawn from its shape (graph_shape) where cuda-bindings reads
        it, else CuPy's debug_dot_str; LaunchbenchError where neither is available."""
        shape = self.graph_shape()
        if shape is not None:
            return to_dot(shape, f"{self.case.scenario} {self.case.case_id}")
        assert self.captured is not None
        if not hasattr(self.captured.graph, "debug_dot_str"):
            raise LaunchbenchError("this CuPy has no Graph.debug_dot_str (CuPy 14 or newer has it)")
        text = self.captured.graph.debug_dot_str()
        return text.decode() if isinstance(text, bytes) else text

    def harness_cost(self) -> float:
        return harness_cost(self.stream, self.clock, self.case.measure.max_in_flight)

    def shape_counts(self) -> dict[str, ShapeCounts]:
        return {}

    def drop_graph(self, reason: str) -> None:
        self.workloads.pop("graph", None)
        self.captured = None
        self.lifecycle = None
        self.graph_failure = reason

    def close(self) -> None:
        self.stream.synchronize()
        self.workloads.clear()
        self.captured = None
        self.steps = []
        self.calls = []
        self.aux_streams = {}
        self.eager = None  # type: ignore[assignment]
        cupy.get_default_memory_pool().free_all_blocks()
        if self.comm is not None:  # after the graphs: a process holding both may hang at exit
            self.control = None
            self.comm.destroy()
            self.comm = None


def _pci_address(device: cupy.cuda.Device) -> str | None:
    """The device's PCI bus id (cudaDeviceGetPCIBusId, "0000:19:00.0"), None where CUDA does not say."""
    for read in (lambda: device.pci_bus_id, lambda: cupy.cuda.runtime.deviceGetPCIBusId(device.id)):
        try:
            return str(read())
        except Exception:  # noqa: BLE001 - a fact for the record only, never the reason a run fails
            continue
    return None


class CupyBackend:
    """Runs cases on one CUDA device through CuPy.

    Every case runs on the same streams: stream 0 is created first, with the backend, and a chain's
    auxiliary stream N is created when a case first asks for it and reused after. A new stream per case
    would make results depend on the case's place in the run: on the H200 a 10-node graph replays in
    6.1 µs on the first streams a process creates and in 7.5–8.3 µs on later ones (stable per stream).
    """

    def __init__(self, device: int, clock: Clock):
        self.device_index = device
        self.device = cupy.cuda.Device(device)
        self.device.use()
        self.clock = clock
        self.monitor = NvmlMonitor.for_cuda_device(device)
        self.pci_address = _pci_address(self.device)
        self._streams: dict[int, cupy.cuda.Stream] = {}
        self.stream(0)
        # before anything else touches the GPU, so its first reading is that of a fresh process
        self._canary = ReferenceCanary(self.stream(0), clock)
        self._warm_graph_machinery()

    def _warm_graph_machinery(self) -> None:
        """Capture and replay a one-node graph once, through the same capture() every case uses, so the
        first case of a worker does not pay the process's one-time graph costs in its life-cycle times
        (each pass runs in a fresh worker; on the H200 its first case's graph setup was 513 µs without
        this, 144 µs with it, like the next one-node case's 133 µs). Best effort: a case's own capture
        reports real failures."""
        try:
            kernel = cupy.RawKernel(EMPTY_SOURCE, "launchbench_empty")
            capture(self.stream(0), [partial(kernel, (1,), (1,), ())], self.clock)
        except Exception:  # noqa: BLE001 - warm-up only; never the reason a run fails
            return

    def canary(self) -> CanaryReading:
        """A reading of the worker's fixed reference (backend/canary.py) on stream 0."""
        return self._canary.read()

    def stream(self, index: int) -> cupy.cuda.Stream:
        """The backend's stream ``index`` (0: the main stream of every chain), created on first use."""
        if index not in self._streams:
            self._streams[index] = cupy.cuda.Stream(non_blocking=True)
        return self._streams[index]

    def environment(self) -> dict[str, Any]:
        return collect_environment(self.device_index)

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> CupyPreparedCase | Any:
        if case.shapes is not None:
            from launchbench.backend.shapes import ShapePreparedCase

            return ShapePreparedCase(case, self.clock, self.stream)
        if holds_torch(case.steps):
            from launchbench.backend.torch_graph import TorchPreparedCase

            return TorchPreparedCase(case, self.clock, self.stream, ranks)
        return CupyPreparedCase(case, self.clock, self.stream, ranks)

    def nccl_unique_id(self) -> Any:
        return unique_id()
