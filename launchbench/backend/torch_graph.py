"""The ``torch_graph`` mode: a chain that holds torch steps captured by ``torch.cuda.CUDAGraph``, as torch
documents it (warm-up iterations, then a capture into a private memory pool), beside eager and CuPy's
stream capture (the ``graph`` mode).

The warm-up and the capture run on the case's main stream (torch's current stream for the case, set by
the torch step's builder), so replays launch where the timing loop's events are recorded and no second
stream launches anything in the worker (on the H200 eager launches on a second stream can leave every
later graph replay of the process slower). The graph makes one exec, launched by its first replay right
after its upload: no exec is destroyed without a launch (backend/graph.py's _retire says why). Capture and
instantiation are timed apart where this torch keeps the captured graph (``keep_graph``), and the
graph's memory is read two ways: the driver's free memory (cudaMemGetInfo) before the capture and
after the first replay, and the growth of torch.cuda.memory_reserved over the capture (its private pool).
The graph is uploaded through cuda-bindings where torch gives the executable graph's handle; otherwise
torch uploads it on its first replay (upload_s is 0 and first_launch_s holds it).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import cupy

from launchbench.backend.base import OutputCheck, RankInfo
from launchbench.backend.chain import StreamSource, issue, reset_steps, snapshot_steps
from launchbench.backend.check import combine_checks, compare_outputs
from launchbench.backend.graph import CaptureFailed, abort_capture, describe_error, free_device_bytes
from launchbench.backend.prepared import CupyPreparedCase
from launchbench.backend.workload import LaunchLoop
from launchbench.measure.clock import Clock
from launchbench.results.schema import GraphLifecycle
from launchbench.scenario.core import Case

WARMUP_ITERS = 3  # torch's documentation warms up with three iterations
MODE = "torch_graph"


@dataclass
class TorchCapture:
    graph: Any  # torch.cuda.CUDAGraph
    pool: Any  # torch's private pool handle
    cupy_pool: cupy.cuda.MemoryPool  # CuPy kernels' temporaries inside the capture
    lifecycle: GraphLifecycle


def new_graph(torch: Any) -> tuple[Any, bool]:
    """A CUDAGraph that keeps its captured graph (instantiated apart) where this torch offers it."""
    try:
        return torch.cuda.CUDAGraph(keep_graph=True), True
    except TypeError:
        return torch.cuda.CUDAGraph(), False


def warm_up(torch: Any, main: Any, calls: Sequence[Callable[[], Any]]) -> None:
    """WARMUP_ITERS eager iterations on the stream that is captured (the case's), then waited for: torch's
    lazy set-up (cuBLAS handles and workspaces, which torch keys by stream) is done for that stream, and
    no second stream launches anything; CaptureFailed with the reason where an iteration fails."""
    try:
        with torch.cuda.stream(main):
            for _ in range(WARMUP_ITERS):
                issue(calls)
        main.synchronize()
    except Exception as err:
        raise CaptureFailed(f"torch_graph warm-up: {describe_error(err)}") from err


def capture_graph(
    torch: Any, graph: Any, pool: Any, stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]]
) -> None:
    """One iteration captured on ``stream`` (as torch's current stream) into ``graph``, its memory from
    ``pool``; CaptureFailed with torch's reason, the capture ended (an invalidated one too) and the
    graph reset, so the stream and torch's allocator are usable again."""
    with torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr)):
        try:
            graph.capture_begin(pool=pool)
            issue(calls)
        except Exception as err:
            _abandon(torch, graph, pool, stream)
            raise CaptureFailed(f"torch.cuda.CUDAGraph capture: {describe_error(err)}") from err
        try:
            graph.capture_end()
        except Exception as err:
            _abandon(torch, graph, pool, stream)
            raise CaptureFailed(f"torch.cuda.CUDAGraph capture_end: {describe_error(err)}") from err


def _abandon(torch: Any, graph: Any, pool: Any, stream: cupy.cuda.Stream) -> None:
    """A capture that failed: ended (torch's capture_end, else the runtime's), torch's allocator told to
    stop serving the capture from ``pool`` and to release it (capture_end skips both when it raises),
    and the graph reset."""
    with contextlib.suppress(Exception):  # the capture is invalid already: end it, keep the reason
        graph.capture_end()
    abort_capture(stream)
    device = torch.cuda.current_device()
    for name in ("_cuda_endAllocateToPool", "_cuda_releasePool"):
        with contextlib.suppress(Exception):  # private in torch: absent or renamed in some releases
            getattr(torch._C, name)(device, pool)
    with contextlib.suppress(Exception):
        graph.reset()


def _node_count(graph: Any) -> int | None:
    """Nodes of the kept graph, through cuda-bindings (None without either)."""
    try:
        from cuda.bindings import runtime as cudart

        result = cudart.cudaGraphGetNodes(cudart.cudaGraph_t(graph.raw_cuda_graph()), numNodes=0)
    except Exception:  # noqa: BLE001 - a count for the record only
        return None
    return int(result[2]) if int(result[0]) == 0 else None


def instantiate(graph: Any) -> None:
    """The one graph exec of ``graph`` (torch's instantiate; its replays launch this exec)."""
    try:
        graph.instantiate()
    except Exception as err:
        raise CaptureFailed(f"torch.cuda.CUDAGraph.instantiate: {describe_error(err)}") from err


def upload(graph: Any, stream: cupy.cuda.Stream) -> bool:
    """cudaGraphUpload of the instantiated graph on ``stream``, done (through cuda-bindings); False where
    this torch or cuda-bindings cannot, and the first replay uploads it."""
    try:
        from cuda.bindings import runtime as cudart

        handle = cudart.cudaGraphExec_t(graph.raw_cuda_graph_exec())
        status = cudart.cudaGraphUpload(handle, stream.ptr)[0]
    except Exception:  # noqa: BLE001 - the replay uploads it instead
        return False
    stream.synchronize()
    return int(status) == 0


def first_replay(torch: Any, graph: Any, main: Any) -> None:
    """The graph's first replay on ``main``, waited for: it launches the one exec that instantiate made
    (and upload uploaded), so no exec is ever destroyed without a launch; CaptureFailed where it fails."""
    try:
        with torch.cuda.stream(main):
            graph.replay()
        main.synchronize()
    except Exception as err:
        raise CaptureFailed(f"torch.cuda.CUDAGraph.replay: {describe_error(err)}") from err


def release(torch: Any, graph: Any, stream: cupy.cuda.Stream) -> None:
    """The graph's end, its replays done: reset (its pool back to torch's allocator, then the graph and
    its exec destroyed), then torch's cached memory back to the driver."""
    stream.synchronize()
    graph.reset()
    torch.cuda.empty_cache()


def capture_torch(stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]], clock: Clock) -> TorchCapture:
    """Capture one iteration of ``calls`` with torch.cuda.CUDAGraph on ``stream`` and time its life
    cycle (warm-up, capture, instantiate, upload, first replay: the one exec is launched as soon as it
    exists); CaptureFailed with the reason where torch refuses it."""
    import torch

    main = torch.cuda.ExternalStream(stream.ptr)
    cupy_pool = cupy.cuda.MemoryPool()
    with cupy.cuda.using_allocator(cupy_pool.malloc), stream:
        warm_up(torch, main, calls)
        graph, kept = new_graph(torch)
        pool = torch.cuda.graph_pool_handle()
        free0, reserved0 = free_device_bytes(), torch.cuda.memory_reserved()
        t0 = clock.wall()
        capture_graph(torch, graph, pool, stream, calls)
        t1 = clock.wall()
        if kept:
            instantiate(graph)
        t2 = clock.wall()
        uploaded = kept and upload(graph, stream)
        t3 = clock.wall()
        first_replay(torch, graph, main)
        t4 = clock.wall()
        free1, reserved1 = free_device_bytes(), torch.cuda.memory_reserved()
    life = GraphLifecycle(
        split=kept,
        capture_s=t1 - t0,
        instantiate_s=t2 - t1 if kept else None,
        upload_s=t3 - t2 if uploaded else 0.0,
        first_launch_s=t4 - t3,
        nodes=_node_count(graph) if kept else None,
        mem_bytes=max(0, free0 - free1),
        pool_bytes=max(0, reserved1 - reserved0) + int(cupy_pool.total_bytes()),
    )
    return TorchCapture(graph=graph, pool=pool, cupy_pool=cupy_pool, lifecycle=life)


class TorchPreparedCase(CupyPreparedCase):
    """A chain that holds torch steps: eager and CuPy's graph as any chain, and the torch_graph mode.
    Each graph mode keeps its own life cycle and failure (``mode_lifecycles``, ``mode_failures``)."""

    def __init__(self, case: Case, clock: Clock, streams: StreamSource, ranks: RankInfo | None = None):
        import torch

        # torch's current stream for the case is its main stream: eager torch ops, CuPy's capture of
        # them and torch_graph's replays all go where the timing loop records its events
        torch.cuda.set_stream(torch.cuda.ExternalStream(streams(0).ptr))
        super().__init__(case, clock, streams, ranks)
        self.mode_lifecycles: dict[str, GraphLifecycle] = {}
        self.mode_failures: dict[str, str] = {}
        self.torch_capture: TorchCapture | None = None
        try:
            self.torch_capture = capture_torch(self.stream, self.calls, clock)
        except CaptureFailed as err:
            self.mode_failures[MODE] = str(err)
            return
        self.mode_lifecycles[MODE] = self.torch_capture.lifecycle
        replay = LaunchLoop(
            [self.torch_capture.graph.replay],
            case.launches_per_iter,
            self.stream,
            clock,
            case.measure.max_in_flight,
        )
        self.workloads[MODE] = replay

    def check_outputs(self) -> OutputCheck:
        """Eager against CuPy's graph (as any chain), and eager against torch_graph, from the same
        initial contents and the same eager outputs; failed_modes names the graph modes whose outputs
        differ."""
        if MODE not in self.workloads:
            return super().check_outputs()
        outputs = self.eager_outputs()
        cupy_check = self.check_graph(outputs)
        if outputs is None:
            return cupy_check
        initial, eager = outputs
        reset_steps(self.stream, self.steps)
        self.workloads[MODE].run_batch(1)
        torch_check = compare_outputs(initial, eager, snapshot_steps(self.stream, self.steps))
        return combine_checks(cupy_check, {MODE: torch_check}, graph_measured="graph" in self.workloads)

    def drop_graph(self, reason: str) -> None:
        super().drop_graph(reason)
        self.workloads.pop(MODE, None)
        self.torch_capture = None
        self.mode_failures[MODE] = reason

    def close(self) -> None:
        import torch

        self.stream.synchronize()
        self.workloads.pop(MODE, None)
        if self.torch_capture is not None:
            release(torch, self.torch_capture.graph, self.stream)
            self.torch_capture = None
        super().close()
        torch.cuda.set_stream(torch.cuda.default_stream())
        torch.cuda.empty_cache()
