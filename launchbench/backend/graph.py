"""Capturing a chain into a CUDA Graph with CuPy's stream capture, and timing the graph's life.

Where cuda.bindings is installed, the life cycle is timed on a capture driven through it on CuPy's own
stream, so capture, instantiate, upload and first launch come out separately (``split``); replays use
the graph from CuPy's ``Stream.begin_capture``/``end_capture`` (CuPy's launch path is the cheaper one).
Without cuda.bindings, CuPy's end_capture instantiates too, and capture includes instantiation.

Temporary buffers that CuPy allocates during capture (e.g. CUB's scratch space for a sum) come from a
memory pool dedicated to the graph and kept alive with it, so no other allocation can reuse them while
the graph may still replay (cupy/cupy#9655).

What other backend modules use: ``capture`` (a chain's graph and its timed life cycle), ``capture_graph``
(one iteration as an instantiated CuPy graph, untimed), ``capture_raw``
(one iteration as a cudaGraph_t, not instantiated), ``abort_capture``, ``checked`` (a cuda-bindings
call's values or CaptureFailed), ``describe_error`` and ``CaptureFailed``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import cupy

from launchbench.backend.chain import issue
from launchbench.measure.clock import Clock
from launchbench.results.schema import GraphLifecycle

try:  # optional: splits capture from instantiate, counts nodes
    from cuda.bindings import runtime as cudart
except ImportError:  # pragma: no cover - depends on the installation
    cudart = None


class CaptureFailed(Exception):
    """The chain cannot be captured (the reason is the message); eager measurement still stands."""


@dataclass
class CapturedGraph:
    graph: Any  # cupy.cuda.Graph
    pool: cupy.cuda.MemoryPool
    lifecycle: GraphLifecycle

    def launch_call(self, stream: cupy.cuda.Stream) -> Callable[[], None]:
        return partial(self.graph.launch, stream)


def checked(result: tuple[Any, ...], what: str) -> Any:
    """The values of a cuda-bindings call (its first value the error code), or CaptureFailed naming the
    call and its error."""
    err = result[0]
    if int(err) != 0:
        name = cudart.cudaGetErrorName(err)[1].decode() if cudart else str(err)
        raise CaptureFailed(f"{what} failed: {name}")
    return result[1] if len(result) == 2 else result[1:]


def abort_capture(stream: cupy.cuda.Stream) -> None:
    """End a capture that failed half-way so the stream is usable again: an active capture and an
    invalidated one alike (CuPy's ``is_capturing`` raises on an invalidated capture, which an error
    inside it leaves, e.g. a synchronize; cudaStreamEndCapture ends it and returns no graph)."""
    try:
        try:
            capturing = bool(stream.is_capturing())
        except RuntimeError:  # invalidated: still in capture mode until it is ended
            capturing = True
        if not capturing:
            return
        if cudart is not None:
            result = cudart.cudaStreamEndCapture(stream.ptr)
            if int(result[0]) == 0 and result[1] is not None:
                cudart.cudaGraphDestroy(result[1])
        else:
            graph = cupy.cuda.runtime.streamEndCapture(stream.ptr)
            if graph:
                cupy.cuda.runtime.graphDestroy(graph)
    except Exception:  # noqa: BLE001 - best effort clean-up after the real error
        pass


def describe_error(err: BaseException) -> str:
    """An exception in one line: its type and the first line of its message."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else ""
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def free_device_bytes() -> int:
    """The device's free memory by the driver (cudaMemGetInfo), in bytes."""
    return int(cupy.cuda.runtime.memGetInfo()[0])


def capture_raw(stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]]) -> Any:
    """One iteration of ``calls`` captured through cuda.bindings on CuPy's stream: a cudaGraph_t, not
    instantiated (the caller destroys it); CaptureFailed where a call fails."""
    mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
    checked(cudart.cudaStreamBeginCapture(stream.ptr, mode), "cudaStreamBeginCapture")
    try:
        issue(calls)
    except Exception as err:
        abort_capture(stream)
        raise CaptureFailed(describe_error(err)) from err
    return checked(cudart.cudaStreamEndCapture(stream.ptr), "cudaStreamEndCapture")


def _split_lifecycle(
    stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]], clock: Clock
) -> GraphLifecycle:
    t0 = clock.wall()
    graph = capture_raw(stream, calls)
    t1 = clock.wall()
    try:
        free0 = free_device_bytes()
        t2 = clock.wall()
        graph_exec = checked(cudart.cudaGraphInstantiateWithFlags(graph, 0), "cudaGraphInstantiate")
        t3 = clock.wall()
        try:
            checked(cudart.cudaGraphUpload(graph_exec, stream.ptr), "cudaGraphUpload")
            stream.synchronize()
            t4 = clock.wall()
            free1 = free_device_bytes()
            checked(cudart.cudaGraphLaunch(graph_exec, stream.ptr), "cudaGraphLaunch")
            stream.synchronize()
            t5 = clock.wall()
            _nodes, count = checked(cudart.cudaGraphGetNodes(graph, numNodes=0), "cudaGraphGetNodes")
        finally:
            cudart.cudaGraphExecDestroy(graph_exec)
    finally:
        cudart.cudaGraphDestroy(graph)
    with_upload, then_upload = _upload_pair(stream, calls, clock)
    return GraphLifecycle(
        split=True,
        capture_s=t1 - t0,
        instantiate_s=t3 - t2,
        upload_s=t4 - t3,
        first_launch_s=t5 - t4,
        nodes=int(count),
        mem_bytes=max(0, free0 - free1),
        instantiate_upload_s=with_upload,
        instantiate_then_upload_s=then_upload,
    )


def _upload_pair(
    stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]], clock: Clock
) -> tuple[float | None, float | None]:
    """Instantiation with cudaGraphInstantiateFlagUpload against instantiate-then-upload, each on a
    fresh capture of the chain and timed until the upload is done, in an order drawn at random: the
    two share one slot of the life cycle (after the first instantiation, which pays what a process's
    first instantiation of these kernels pays), so neither is the other's warm-up. (None, None) where
    this runtime or cuda-bindings has no cudaGraphInstantiateWithParams."""
    if not hasattr(cudart, "cudaGraphInstantiateWithParams"):
        return None, None
    upload_first = random.getrandbits(1) == 1
    times: dict[bool, float | None] = {}
    for with_flag in (upload_first, not upload_first):
        graph = capture_raw(stream, calls)
        try:
            times[with_flag] = _time_instantiation(graph, stream, clock, with_flag)
        finally:
            cudart.cudaGraphDestroy(graph)
    return times[True], times[False]


def _time_instantiation(graph: Any, stream: cupy.cuda.Stream, clock: Clock, with_flag: bool) -> float | None:
    """Seconds from instantiation to the upload done on ``stream``: one cudaGraphInstantiateWithParams
    with cudaGraphInstantiateFlagUpload, or cudaGraphInstantiateWithFlags then cudaGraphUpload."""
    params = None
    if with_flag:
        try:
            params = cudart.cudaGraphInstantiateParams()
            params.flags = int(cudart.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload)
            params.uploadStream = stream.ptr
        except (AttributeError, TypeError, ValueError):
            return None
    t0 = clock.wall()
    if params is not None:
        result = cudart.cudaGraphInstantiateWithParams(graph, params)
    else:
        result = cudart.cudaGraphInstantiateWithFlags(graph, 0)
    if int(result[0]) != 0:
        return None  # the life cycle stands without it; the column stays empty
    graph_exec = result[1]
    try:
        if params is None:
            checked(cudart.cudaGraphUpload(graph_exec, stream.ptr), "cudaGraphUpload")
        stream.synchronize()
        return clock.wall() - t0
    finally:
        _retire(graph_exec, stream)


def _retire(graph_exec: Any, stream: cupy.cuda.Stream) -> None:
    """Launch an uploaded graph exec once (untimed) before destroying it. On the H200 (driver 580, CUDA
    13.2), destroying an exec that was uploaded but never launched leaves every later graph replay of the
    process about 35% slower (0.51 → 0.69 µs per node), whichever stream it runs on
    (results/fidelity-h200/probe/); an exec launched once before it is destroyed leaves none."""
    try:
        if int(cudart.cudaGraphLaunch(graph_exec, stream.ptr)[0]) == 0:
            stream.synchronize()
    finally:
        cudart.cudaGraphExecDestroy(graph_exec)


def _count_nodes(graph: Any) -> int | None:
    """Nodes of a graph CuPy captured and instantiated itself (without cuda-bindings: _split_lifecycle
    counts them through the runtime otherwise), from its DOT description."""
    if hasattr(graph, "debug_dot_str"):
        return len(set(re.findall(r'"(graph_\d+_node_\d+)"\[', graph.debug_dot_str())))
    return None


def capture_graph(
    stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]], pool: cupy.cuda.MemoryPool
) -> Any:
    """One iteration of ``calls`` captured with CuPy's stream capture, its allocations from ``pool``: an
    instantiated cupy.cuda.Graph; CaptureFailed with the reason, the capture ended, where it fails."""
    with cupy.cuda.using_allocator(pool.malloc), stream:
        try:
            stream.begin_capture()
            issue(calls)
            return stream.end_capture()
        except Exception as err:
            abort_capture(stream)
            raise CaptureFailed(describe_error(err)) from err


def capture(stream: cupy.cuda.Stream, calls: Sequence[Callable[[], Any]], clock: Clock) -> CapturedGraph:
    """Capture one iteration of ``calls`` on ``stream`` and time the graph's life cycle.

    The calls must already have run once eagerly under the same memory pool (warm-up), so that capture
    allocates nothing new. Raises CaptureFailed with the reason when the chain cannot be captured.
    """
    pool = cupy.cuda.MemoryPool()
    with cupy.cuda.using_allocator(pool.malloc), stream:
        issue(calls)  # warm the graph's pool: temporaries are cached before capture
        stream.synchronize()
        split_life = _split_lifecycle(stream, calls, clock) if cudart is not None else None
        free0 = free_device_bytes()
        t0 = clock.wall()
        try:
            stream.begin_capture()
            issue(calls)
            graph = stream.end_capture()
        except Exception as err:
            abort_capture(stream)
            raise CaptureFailed(describe_error(err)) from err
        t1 = clock.wall()
        graph.upload(stream)
        stream.synchronize()
        t2 = clock.wall()
        free1 = free_device_bytes()
        graph.launch(stream)
        stream.synchronize()
        t3 = clock.wall()
    life = split_life or GraphLifecycle(
        split=False,
        capture_s=t1 - t0,
        instantiate_s=None,
        upload_s=t2 - t1,
        first_launch_s=t3 - t2,
        nodes=_count_nodes(graph),
        mem_bytes=max(0, free0 - free1),
    )
    life = life.model_copy(update={"pool_bytes": int(pool.total_bytes())})
    return CapturedGraph(graph=graph, pool=pool, lifecycle=life)
