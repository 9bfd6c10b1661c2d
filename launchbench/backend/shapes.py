"""Shape-changing chains on the GPU (a scenario's ``shapes:``): the chain built at every shape, and one
workload per mode that walks the shape sequence (each shape ``per_shape`` iterations, then the next; the
sequence repeats):

- ``eager``: the current shape's launches, one by one;
- ``recapture``: at every change, the new shape captured with CuPy's stream capture (which instantiates)
  and uploaded; the old graph is dropped;
- ``cache``: one graph per shape, captured and uploaded the first time the shape comes (a miss) and
  replayed whenever it comes back (a hit); at most ``cache_limit`` graphs, the least recently used
  dropped;
- ``update``: one executable graph; at every change the new shape is captured through cuda.bindings on
  CuPy's stream (not instantiated) and ``cudaGraphExecUpdate`` writes it into the executable graph. A
  refused update is counted with its ``cudaGraphExecUpdateResult`` and falls back to a re-capture.

The host time each mode spends at the changes (capture, instantiate, upload, update: the setup paid per
change) is timed with the injected clock and counted with the changes. Before it is measured, every mode
runs one priming cycle through all shapes: kernels are compiled, temporaries cached in the mode's memory
pool and the cache filled, as in a long-running program.

Every shape has its own buffers (a step that does not use the shape parameter is built once and shared),
so a graph of one shape never writes another shape's buffers. Temporaries CuPy allocates inside a capture
(CUB's scratch space) come from a pool kept for the mode's life (cupy/cupy#9655).
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import cupy
import numpy as np

from launchbench.backend import device_check
from launchbench.backend.base import GraphDrawing, OutputCheck, RankControl
from launchbench.backend.chain import (
    Calls,
    StreamSource,
    debug_dot,
    fork_join,
    harness_cost,
    issue,
    refuse_unless_fits,
    reset_steps,
    snapshot_steps,
)
from launchbench.backend.check import compare_outputs
from launchbench.backend.graph import (
    CaptureFailed,
    capture_graph,
    capture_raw,
    checked,
    cudart,
)
from launchbench.backend.step_builder import StepBuilder
from launchbench.backend.window import LaunchWindow
from launchbench.backend.workload import poll, timed_batch
from launchbench.errors import LaunchbenchError
from launchbench.kinds.base import BuiltStep
from launchbench.kinds.registry import step_bytes
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import BatchTiming
from launchbench.results.schema import GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case, ShapePlan

CHECK_CYCLES = 2  # the output check walks every shape twice: cache hits and updates back to a shape


class StrategyUnavailable(Exception):
    """This installation cannot run the strategy (the reason is the message)."""


@dataclass
class Counter:
    """What a mode has done since its priming cycle (ShapeCounts, while it counts)."""

    iterations: int = 0
    changes: int = 0
    setup_s: float = 0.0
    updates: int = 0
    update_refusals: int = 0
    recaptures: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def frozen(self) -> ShapeCounts:
        return ShapeCounts(
            iterations=self.iterations,
            changes=self.changes,
            setup_s=self.setup_s,
            updates=self.updates,
            update_refusals=self.update_refusals,
            recaptures=self.recaptures,
            cache_hits=self.cache_hits,
            cache_misses=self.cache_misses,
            refusal_reasons=dict(self.reasons),
        )


def capture_raw_pooled(stream: cupy.cuda.Stream, calls: Calls, pool: cupy.cuda.MemoryPool) -> Any:
    """One iteration of ``calls`` captured through cuda.bindings on CuPy's stream: a cudaGraph_t, not
    instantiated (the caller destroys it)."""
    with cupy.cuda.using_allocator(pool.malloc), stream:
        return capture_raw(stream, calls)


def node_types(graph: Any) -> list[str]:
    """The types of a graph's nodes (through cuda-bindings), e.g. ['Kernel', 'Kernel', 'Memset']."""
    _nodes, count = checked(cudart.cudaGraphGetNodes(graph, numNodes=0), "cudaGraphGetNodes")
    nodes, _count = checked(cudart.cudaGraphGetNodes(graph, numNodes=count), "cudaGraphGetNodes")
    types = []
    for node in list(nodes)[:count]:
        kind = checked(cudart.cudaGraphNodeGetType(node), "cudaGraphNodeGetType")
        types.append(str(getattr(kind, "name", kind)).removeprefix("cudaGraphNodeType"))
    return types


def refusal_reason(err: Any, info: Any, old: Any, new: Any) -> str:
    """Why cudaGraphExecUpdate refused to write graph ``new`` into the executable graph made from ``old``:
    the cudaGraphExecUpdateResult where cuda-bindings returns one; it returns none with a failed call,
    so otherwise the error's name and what differs between the two graphs (node count, node types, or
    neither: a parameter the update cannot change)."""
    result = getattr(info, "result", None)
    if result is not None:
        return str(getattr(result, "name", result))
    name = cudart.cudaGetErrorName(err)[1]
    error = name.decode() if isinstance(name, bytes) else str(name)
    if old is None:
        return error
    try:
        before, after = node_types(old), node_types(new)
    except CaptureFailed:
        return error
    if len(before) != len(after):
        return f"{error} (topology changed, {len(before)} → {len(after)} nodes)"
    if sorted(before) != sorted(after):
        return f"{error} (node types changed)"
    return f"{error} (same nodes; a parameter an update cannot change)"


class Strategy:
    """How one mode runs the current shape: ``enter(index)`` makes shape ``index`` current (at a change),
    ``launch()`` issues one iteration and returns the launches it queued since the window's last mark."""

    def __init__(self, calls: Sequence[Calls], stream: cupy.cuda.Stream, counter: Counter):
        self.calls = calls
        self.stream = stream
        self.counter = counter
        self.current = -1
        self.window: LaunchWindow | None = None

    def enter(self, index: int) -> None:
        raise NotImplementedError

    def launch(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        return None


class EagerStrategy(Strategy):
    def __init__(self, calls: Sequence[Calls], stream: cupy.cuda.Stream, counter: Counter, block: int):
        super().__init__(calls, stream, counter)
        self.chunks = [[list(c[i : i + block]) for i in range(0, len(c), block)] or [[]] for c in calls]
        self._chunks: list[list[Callable[[], Any]]] = []

    def enter(self, index: int) -> None:
        self._chunks = self.chunks[index]
        self.current = index

    def launch(self) -> int:
        chunks = self._chunks
        if len(chunks) == 1:
            for call in chunks[0]:
                call()
            return len(chunks[0])
        for chunk in chunks:
            for call in chunk:
                call()
            if self.window is not None:
                self.window.mark()
        return 0


class GraphStrategy(Strategy):
    """A strategy that replays a graph of the current shape; captures draw temporaries from its own pool."""

    def __init__(self, calls: Sequence[Calls], stream: cupy.cuda.Stream, counter: Counter):
        super().__init__(calls, stream, counter)
        self.pool = cupy.cuda.MemoryPool()
        self.graph: Any = None
        with cupy.cuda.using_allocator(self.pool.malloc), stream:
            for shape_calls in calls:  # temporaries cached in the pool before any capture
                issue(shape_calls)
        stream.synchronize()

    def capture(self, index: int) -> Any:
        graph = capture_graph(self.stream, self.calls[index], self.pool)
        graph.upload(self.stream)
        self.counter.recaptures += 1
        return graph

    def launch(self) -> int:
        self.graph.launch(self.stream)
        return 1

    def close(self) -> None:
        self.graph = None


class RecaptureStrategy(GraphStrategy):
    def enter(self, index: int) -> None:
        self.graph = (
            None  # dropped at the change; CUDA frees an executable graph still in flight when it ends
        )
        self.graph = self.capture(index)
        self.current = index


class CacheStrategy(GraphStrategy):
    def __init__(self, calls: Sequence[Calls], stream: cupy.cuda.Stream, counter: Counter, limit: int | None):
        super().__init__(calls, stream, counter)
        self.limit = limit or len(calls)
        self.cache: OrderedDict[int, Any] = OrderedDict()

    def enter(self, index: int) -> None:
        graph = self.cache.get(index)
        if graph is not None:
            self.cache.move_to_end(index)
            self.counter.cache_hits += 1
        else:
            self.counter.cache_misses += 1
            graph = self.cache[index] = self.capture(index)
            while len(self.cache) > self.limit:
                self.cache.popitem(last=False)
        self.graph = graph
        self.current = index

    def close(self) -> None:
        self.cache.clear()
        self.graph = None


class UpdateStrategy(GraphStrategy):
    """One executable graph; ``template`` is the graph whose topology it has (CuPy's graph after a
    capture, the last applied capture after an update), kept to say why an update is refused."""

    def __init__(self, calls: Sequence[Calls], stream: cupy.cuda.Stream, counter: Counter):
        if cudart is None:
            raise StrategyUnavailable("cuda-bindings is not installed (cudaGraphExecUpdate needs it)")
        super().__init__(calls, stream, counter)
        self.template: Any = None
        self._raw: Any = None  # a graph captured through cuda-bindings, destroyed here

    def _recapture(self, index: int) -> None:
        self.graph = None
        self.graph = self.capture(index)
        self._release()
        self.template = getattr(self.graph, "graph", None)  # CuPy 13 keeps no template graph

    def _release(self) -> None:
        if self._raw is not None:
            cudart.cudaGraphDestroy(self._raw)
            self._raw = None

    def enter(self, index: int) -> None:
        if self.graph is None:
            self._recapture(index)
            self.current = index
            return
        handle = getattr(self.graph, "graphExec", None)
        if handle is None:
            raise StrategyUnavailable("this CuPy's Graph has no graphExec handle to update")
        raw = capture_raw_pooled(self.stream, self.calls[index], self.pool)
        err, info = cudart.cudaGraphExecUpdate(handle, raw)
        if int(err) == 0:
            self.counter.updates += 1
            self._release()
            self._raw = self.template = raw
        else:
            cudart.cudaGetLastError()  # the refusal is answered here; it must not surface in a later call
            reason = refusal_reason(err, info, self.template, raw)
            cudart.cudaGraphDestroy(raw)
            self.counter.update_refusals += 1
            self.counter.reasons[reason] = self.counter.reasons.get(reason, 0) + 1
            self._recapture(index)
        self.current = index

    def close(self) -> None:
        self.graph = None
        self.template = None
        self._release()


class ShapeLoop:
    """One mode of a shape-changing case as a sampler Workload: iterations walk the shape sequence from
    where the last batch stopped; the launch queue is bounded as in LaunchLoop."""

    def __init__(
        self,
        strategy: Strategy,
        plan: ShapePlan,
        launches_per_iter: int,
        stream: cupy.cuda.Stream,
        clock: Clock,
        max_in_flight: int,
    ):
        self.strategy = strategy
        self.per_shape = plan.per_shape
        self.distinct = plan.distinct
        self.iters_multiple = plan.per_shape  # a sample of whole shapes holds the same number of changes
        self.launches_per_iter = launches_per_iter
        self.stream = stream
        self.clock = clock
        self.window = LaunchWindow(stream, max_in_flight)
        strategy.window = self.window
        self.position = 0
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()

    def prime(self) -> None:
        """One iteration at every shape (compiles, caches, fills the cache), then counting starts afresh."""
        with self.stream:
            for index in range(self.distinct):
                self.strategy.enter(index)
                self.strategy.launch()
            self.stream.synchronize()
        self.strategy.counter = Counter()
        self.position = 0

    @property
    def counter(self) -> Counter:
        return self.strategy.counter

    @contextlib.contextmanager
    def not_counting(self) -> Iterator[None]:
        kept = self.strategy.counter
        self.strategy.counter = Counter()
        try:
            yield
        finally:
            self.strategy.counter = kept

    def _launch(self, iters: int) -> None:
        strategy, clock, window = self.strategy, self.clock, self.window
        per_shape, distinct, block = self.per_shape, self.distinct, window.block
        window.reset()
        pending = 0
        position = self.position
        counter = strategy.counter
        for _ in range(iters):
            if position % per_shape == 0:
                index = (position // per_shape) % distinct
                if index != strategy.current:
                    t0 = clock.wall()
                    strategy.enter(index)
                    counter.setup_s += clock.wall() - t0
                    counter.changes += 1
            pending += strategy.launch()
            if pending >= block:
                window.mark()
                pending = 0
            position += 1
        self.position = position
        counter.iterations += iters

    def run_batch(self, iters: int) -> BatchTiming:
        return timed_batch(self.stream, self.clock, self._start, self._end, self._launch, iters)

    def run_latency(self) -> float:
        """One iteration (at a change when the sequence is at one) on an idle stream, launch to completion."""
        with self.stream:
            self.stream.synchronize()
            wall0 = self.clock.wall()
            self._launch(1)
            poll(cupy.cuda.runtime.streamQuery, self.stream.ptr, self.stream.synchronize)
            return self.clock.wall() - wall0


def _bytes_needed(plan: ShapePlan) -> int:
    unique = {id(step): step for steps in plan.variants for step in steps}
    return sum(step_bytes(step) for step in unique.values())


Snapshot = TypeVar("Snapshot", dict[str, np.ndarray], device_check.DeviceSnapshot)


def _host_judge(
    initial: dict[str, np.ndarray], eager: dict[str, np.ndarray]
) -> Callable[[dict[str, np.ndarray]], OutputCheck]:
    return partial(compare_outputs, initial, eager)


class ShapePreparedCase:
    """A shape-changing case built on the GPU, with a ShapeLoop per mode (PreparedCase)."""

    def __init__(self, case: Case, clock: Clock, streams: StreamSource):
        assert case.shapes is not None
        plan = self.plan = case.shapes
        self.case = case
        self.clock = clock
        refuse_unless_fits(
            _bytes_needed(plan),
            f" over its {plan.distinct} shapes ({plan.label(0)} … {plan.label(plan.distinct - 1)}, "
            "each its own buffers)",
        )
        self.stream = streams(0)
        aux_ids = sorted({step.stream for steps in plan.variants for step in steps if step.stream})
        self.aux_streams = {index: streams(index) for index in aux_ids}
        self.steps: list[BuiltStep] = []
        self.calls = self._build(plan)
        self.lifecycle: GraphLifecycle | None = None  # a life cycle per change is in shape_counts
        self.graph_failure: str | None = None
        self.control: RankControl | None = None  # one GPU: shape-changing cases have no ranks
        self.loops: dict[str, ShapeLoop] = {}
        self.workloads: dict[str, Any] = {}
        block = max(1, case.measure.max_in_flight // 2)
        self._add("eager", EagerStrategy(self.calls, self.stream, Counter(), block))
        failures: list[str] = []
        for name in plan.strategies:
            try:
                self._add(name, self._strategy(name))
            except StrategyUnavailable as err:
                failures.append(f"{name}: {err}")
            except CaptureFailed as err:
                failures.append(str(err))
                self.stream.synchronize()
                break  # every graph strategy captures the same chain
        if failures:
            self.graph_failure = "; ".join(failures)

    def _build(self, plan: ShapePlan) -> list[list[Callable[[], Any]]]:
        builder = StepBuilder(self.stream, streams=self.aux_streams, source=self.case.source)
        shared = [
            all(steps[i] is plan.variants[0][i] for steps in plan.variants)
            for i in range(len(plan.variants[0]))
        ]
        built: dict[int, BuiltStep] = {}
        per_shape: list[list[Callable[[], Any]]] = []
        with self.stream:
            for shape, steps in enumerate(plan.variants):
                calls: list[Callable[[], Any]] = []
                for index, step in enumerate(steps):
                    one = built.get(id(step))
                    if one is None:
                        one = builder.build(step, index)
                        if not shared[index]:
                            one.outputs = {f"{plan.label(shape)}.{k}": v for k, v in one.outputs.items()}
                        built[id(step)] = one
                        self.steps.append(one)
                    calls.extend(one.calls)
                per_shape.append(calls)
        if self.aux_streams:
            cupy.cuda.Device().synchronize()  # initial contents written on any stream are in place
            aux = list(self.aux_streams.values())
            per_shape = [fork_join(self.stream, aux, calls) for calls in per_shape]
        for calls in per_shape:  # compile and load every kernel before anything is timed or captured
            with self.stream:
                issue(calls)
        self.stream.synchronize()
        return per_shape

    def _strategy(self, name: str) -> Strategy:
        if name == "recapture":
            return RecaptureStrategy(self.calls, self.stream, Counter())
        if name == "cache":
            return CacheStrategy(self.calls, self.stream, Counter(), self.plan.cache_limit)
        if name == "update":
            return UpdateStrategy(self.calls, self.stream, Counter())
        raise LaunchbenchError(f"unknown shape strategy '{name}'")

    def _add(self, name: str, strategy: Strategy) -> None:
        loop = ShapeLoop(
            strategy,
            self.plan,
            self.case.launches_per_iter,
            self.stream,
            self.clock,
            self.case.measure.max_in_flight,
        )
        loop.prime()
        self.loops[name] = loop
        self.workloads[name] = loop

    def shape_counts(self) -> dict[str, ShapeCounts]:
        return {name: loop.counter.frozen() for name, loop in self.loops.items()}

    def drop_graph(self, reason: str) -> None:
        """Measure and check eager only: every graph strategy closed and dropped."""
        for name in [name for name in self.loops if name != "eager"]:
            self.loops.pop(name).strategy.close()
            self.workloads.pop(name, None)
        self.graph_failure = reason

    def _walk(self, mode: str) -> None:
        """From the initial contents, every shape in turn (CHECK_CYCLES times), up to two iterations each,
        through the mode's own strategy (its cache and its executable graph as measured); not counted.
        The outputs are left as the walk wrote them."""
        loop = self.loops[mode]
        reset_steps(self.stream, self.steps)
        with loop.not_counting(), self.stream:
            for _ in range(CHECK_CYCLES):
                for index in range(self.plan.distinct):
                    if loop.strategy.current != index:
                        loop.strategy.enter(index)
                    for _ in range(min(self.plan.per_shape, 2)):
                        loop.strategy.launch()
            self.stream.synchronize()

    def check_outputs(self) -> OutputCheck:
        """Every graph strategy's walk against eager's, the snapshots kept on the GPU (device_check);
        on the host where the GPU has no room for them."""
        modes = [mode for mode in self.loops if mode != "eager"]
        if not modes:
            return OutputCheck(None, f"no graph to compare ({self.graph_failure})")
        try:
            return self._check_with(modes, device_check.snapshot, self._device_judge)
        except cupy.cuda.memory.OutOfMemoryError:
            cupy.get_default_memory_pool().free_all_blocks()
        return self._check_with(modes, snapshot_steps, _host_judge)

    def _device_judge(self, initial: Any, eager: Any) -> Callable[[Any], OutputCheck]:
        return device_check.judge_against(initial, eager, self.stream)

    def _check_with(
        self,
        modes: list[str],
        take: Callable[[cupy.cuda.Stream, Sequence[BuiltStep]], Snapshot],
        judge_against: Callable[[Snapshot, Snapshot], Callable[[Snapshot], OutputCheck]],
    ) -> OutputCheck:
        """The walks' outputs taken by ``take`` (a snapshot of the steps), each graph strategy's judged
        against the initial contents and eager's walk (``judge_against``)."""
        reset_steps(self.stream, self.steps)
        initial = take(self.stream, self.steps)
        if not len(initial):
            return OutputCheck(None, "the chain writes no buffer")
        self._walk("eager")
        judge = judge_against(initial, take(self.stream, self.steps))
        checks = {}
        for mode in modes:
            self._walk(mode)
            checks[mode] = judge(take(self.stream, self.steps))
        return self._verdict(modes, checks)

    def _verdict(self, modes: list[str], checks: dict[str, OutputCheck]) -> OutputCheck:
        failed = tuple(mode for mode, check in checks.items() if check.match is False)
        if failed:
            detail = "; ".join(f"{mode}: {checks[mode].detail}" for mode in failed)
            return OutputCheck(False, detail, failed)
        first = checks[modes[0]].detail
        return OutputCheck(
            True, f"{', '.join(modes)} equal eager over every one of {self.plan.distinct} shapes ({first})"
        )

    def graph_dot(self) -> str:
        """The first shape's graph in Graphviz DOT."""
        return debug_dot(capture_graph(self.stream, self.calls[0], cupy.cuda.MemoryPool()))

    def draw_graph(self) -> GraphDrawing:
        """The first shape's graph, drawn by CuPy (its nodes are not counted)."""
        return GraphDrawing(self.graph_dot(), None)

    def harness_cost(self) -> float:
        return harness_cost(self.stream, self.clock, self.case.measure.max_in_flight)

    def close(self) -> None:
        self.stream.synchronize()
        for loop in self.loops.values():
            loop.strategy.close()
        self.loops.clear()
        self.workloads.clear()
        self.steps = []
        self.calls = []
        cupy.get_default_memory_pool().free_all_blocks()
