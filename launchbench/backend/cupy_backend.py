"""The CuPy backend: builds a case's buffers and launch calls, captures the graph, times both modes
and checks the graph's outputs against eager ones."""

from __future__ import annotations

from typing import Any

import cupy
import numpy as np

from launchbench.backend.base import CaseRefused, OutputCheck
from launchbench.backend.check import compare_outputs
from launchbench.backend.graph import CaptureFailed, capture
from launchbench.backend.workload import LaunchLoop
from launchbench.environment import NvmlMonitor, collect_environment
from launchbench.kernels.steps import BuiltStep, StepBuilder, step_bytes
from launchbench.measure.clock import Clock
from launchbench.results.schema import GraphLifecycle
from launchbench.scenario.expand import Case

MEMORY_HEADROOM = 0.9  # refuse a case whose buffers would take more than this share of free memory
HARNESS_ITERS = 20_000


def _noop() -> None:
    return None


class CupyPreparedCase:
    def __init__(self, case: Case, device: cupy.cuda.Device, clock: Clock):
        self.case = case
        self.clock = clock
        needed = sum(step_bytes(step) for step in case.steps)
        free, total = cupy.cuda.runtime.memGetInfo()
        if needed > MEMORY_HEADROOM * free:
            raise CaseRefused(
                f"case needs {needed / 2**30:.2f} GiB of GPU memory for its buffers; "
                f"{free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free"
            )
        self.stream = cupy.cuda.Stream(non_blocking=True)
        builder = StepBuilder(self.stream)
        with self.stream:
            self.steps: list[BuiltStep] = [builder.build(step, i) for i, step in enumerate(case.steps)]
        self.calls = [call for built in self.steps for call in built.calls]
        launches = case.launches_per_iter
        max_in_flight = case.measure.max_in_flight
        self.eager = LaunchLoop(self.calls, launches, self.stream, clock, max_in_flight)
        self.eager.run_batch(1)  # compile and load every kernel before anything is timed or captured
        self.workloads: dict[str, Any] = {"eager": self.eager}
        self.lifecycle: GraphLifecycle | None = None
        self.graph_failure: str | None = None
        self.captured = None
        try:
            self.captured = capture(self.stream, self.calls, clock)
        except CaptureFailed as err:
            self.graph_failure = str(err)
        if self.captured is not None:
            self.lifecycle = self.captured.lifecycle
            graph_call = self.captured.launch_call(self.stream)
            self.workloads["graph"] = LaunchLoop([graph_call], launches, self.stream, clock, max_in_flight)

    def _reset(self) -> None:
        with self.stream:
            for built in self.steps:
                built.reset()
        self.stream.synchronize()

    def _snapshot(self) -> dict[str, np.ndarray]:
        self.stream.synchronize()
        return {name: cupy.asnumpy(array) for built in self.steps for name, array in built.outputs.items()}

    def check_outputs(self) -> OutputCheck:
        if self.captured is None:
            return OutputCheck(None, f"no graph to compare ({self.graph_failure})")
        self._reset()
        initial = self._snapshot()
        if not initial:
            return OutputCheck(None, "the chain writes no buffer; graph node count checked instead")
        self.eager.run_batch(1)
        eager = self._snapshot()
        self._reset()
        self.workloads["graph"].run_batch(1)
        graph = self._snapshot()
        return compare_outputs(initial, eager, graph)

    def harness_cost(self) -> float:
        loop = LaunchLoop([_noop], 1, self.stream, self.clock, self.case.measure.max_in_flight)
        costs = []
        for _ in range(5):
            timing = loop.run_batch(HARNESS_ITERS)
            costs.append(timing.wall_s / HARNESS_ITERS)
        return float(np.median(costs))

    def close(self) -> None:
        self.stream.synchronize()
        self.workloads.clear()
        self.captured = None
        self.steps = []
        self.calls = []
        self.eager = None  # type: ignore[assignment]
        cupy.get_default_memory_pool().free_all_blocks()


class CupyBackend:
    """Runs cases on one CUDA device through CuPy."""

    def __init__(self, device: int, clock: Clock):
        self.device_index = device
        self.device = cupy.cuda.Device(device)
        self.device.use()
        self.clock = clock
        self.monitor = NvmlMonitor.for_cuda_device(device)

    def environment(self) -> dict[str, Any]:
        return collect_environment(self.device_index)

    def prepare(self, case: Case) -> CupyPreparedCase:
        return CupyPreparedCase(case, self.device, self.clock)
