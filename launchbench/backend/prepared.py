"""One case of one chain built on the GPU through CuPy: its buffers and launch calls, the eager loop,
the captured graph and its loop, the output check of graph against eager (and against the host where
a kind computes its outputs there), and the drawing of the captured graph."""

from __future__ import annotations

from typing import Any

import cupy
import numpy as np

from launchbench.backend.base import GraphDrawing, OutputCheck, RankControl, RankInfo
from launchbench.backend.chain import (
    StreamSource,
    debug_dot,
    fork_join,
    harness_cost,
    refuse_unless_fits,
    reset_steps,
    snapshot_steps,
)
from launchbench.backend.check import compare_outputs, compare_reference
from launchbench.backend.graph import CaptureFailed, capture
from launchbench.backend.graph_shape import GraphShape, describe, to_dot
from launchbench.backend.graph_shape import walk as walk_graph
from launchbench.backend.nccl_ranks import NcclControl, communicator
from launchbench.backend.step_builder import StepBuilder
from launchbench.backend.workload import LaunchLoop
from launchbench.errors import LaunchbenchError
from launchbench.kinds.base import BuiltStep
from launchbench.kinds.registry import step_bytes
from launchbench.measure.clock import Clock
from launchbench.results.schema import GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case

# the buffers a chain writes: their initial contents, and after one eager iteration from them
EagerOutputs = tuple[dict[str, np.ndarray], dict[str, np.ndarray]]


class CupyPreparedCase:
    def __init__(self, case: Case, clock: Clock, streams: StreamSource, ranks: RankInfo | None = None):
        self.case = case
        self.clock = clock
        self.comm: Any = None
        self.control: RankControl | None = None
        refuse_unless_fits(sum(step_bytes(step) for step in case.steps))
        self.stream = streams(0)
        aux_ids = sorted({step.stream for step in case.steps if getattr(step, "stream", 0)})
        self.aux_streams = {index: streams(index) for index in aux_ids}
        if ranks is not None:
            self.comm = communicator(ranks)  # every rank builds, warms and captures in the same order
            self.control = NcclControl(self.comm, self.stream, ranks.rank)
        self.steps: list[BuiltStep] = self._build(ranks)
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

    def _build(self, ranks: RankInfo | None) -> list[BuiltStep]:
        builder = StepBuilder(
            self.stream,
            streams=self.aux_streams,
            source=self.case.source,
            rank=ranks.rank if ranks else 0,
            world=ranks.world if ranks else 1,
            communicator=self.comm,
        )
        with self.stream:
            return [builder.build(step, i) for i, step in enumerate(self.case.steps)]

    def check_outputs(self) -> OutputCheck:
        if self.captured is None:
            return self._check_eager_only()
        return self.check_graph(self.eager_outputs())

    def eager_outputs(self) -> EagerOutputs | None:
        """The buffers the chain writes as reset, and after one eager iteration from there (what every
        graph mode's outputs are checked against); None where the chain writes none."""
        reset_steps(self.stream, self.steps)
        initial = snapshot_steps(self.stream, self.steps)
        if not initial:
            return None
        self.eager.run_batch(1)
        return initial, snapshot_steps(self.stream, self.steps)

    def check_graph(self, outputs: EagerOutputs | None) -> OutputCheck:
        """The captured graph's outputs from the initial contents against eager's (``outputs``, from
        eager_outputs), and eager's against the host reference where a kind gives one; without a graph,
        eager's against the host reference only."""
        if self.captured is None:
            return self._check_eager_only(outputs[1] if outputs else None)
        if outputs is None:
            return OutputCheck(None, "the chain writes no buffer; graph node count checked instead")
        initial, eager = outputs
        reset_steps(self.stream, self.steps)
        self.workloads["graph"].run_batch(1)
        check = compare_outputs(initial, eager, snapshot_steps(self.stream, self.steps))
        host = compare_reference(self._references(), eager)
        if host is None or check.match is False:
            return check
        if host.match is False:
            return host
        return OutputCheck(True, f"{check.detail}; {host.detail}")

    def _check_eager_only(self, eager: dict[str, np.ndarray] | None = None) -> OutputCheck:
        """No graph: eager's outputs (``eager``, else one eager iteration from the initial contents)
        against the host reference, where a kind gives one."""
        no_graph = f"no graph to compare ({self.graph_failure})"
        references = self._references()
        if not references:
            return OutputCheck(None, no_graph)
        if eager is None:
            reset_steps(self.stream, self.steps)
            self.eager.run_batch(1)
            eager = snapshot_steps(self.stream, self.steps)
        host = compare_reference(references, eager)
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
        """The captured graph in Graphviz DOT (see draw_graph)."""
        return self.draw_graph().dot

    def draw_graph(self) -> GraphDrawing:
        """The captured graph drawn from its shape (graph_shape) where cuda-bindings reads it, else
        CuPy's debug_dot_str; LaunchbenchError where neither is available."""
        shape = self.graph_shape()
        if shape is not None:
            return GraphDrawing(to_dot(shape, f"{self.case.scenario} {self.case.case_id}"), describe(shape))
        assert self.captured is not None
        return GraphDrawing(debug_dot(self.captured.graph), None)

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
