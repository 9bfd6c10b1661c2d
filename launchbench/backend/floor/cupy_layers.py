"""The CuPy layers: ``cupy_raw`` (RawKernel called positionally, on the current stream),
``cupy_raw_stream`` (the same with ``stream=``), ``cupy_elementwise`` (an ElementwiseKernel copying one
small array into another), ``cupy_ufunc`` (``cupy.multiply`` with ``out=``), each eagerly and as a
captured graph replayed with ``Graph.launch``; and ``gpu``: a graph of empty kernels replayed back to
back, whose GPU time per node is the GPU's own floor."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import cupy

from launchbench.backend.floor.base import FloorContext, LayerWorkloads, kernel_name
from launchbench.backend.graph import capture_graph
from launchbench.backend.workload import LaunchLoop
from launchbench.measure.sampler import Workload

ELEMENTS = 1024  # the arrays the elementwise kernel and the ufunc work on: GPU time far below a launch's


def _graph(ctx: FloorContext, call: Callable[[], Any], nodes: int) -> Any:
    """``call`` captured ``nodes`` times on the context's stream: the instantiated CuPy Graph (the calls
    allocate nothing: the default pool serves the capture, as it serves the eager calls)."""
    graph = capture_graph(ctx.stream, [call] * nodes, cupy.get_default_memory_pool())
    ctx.shared.setdefault("graphs", []).append(graph)  # kept alive until the context closes
    return graph


def _loop(ctx: FloorContext, calls: list[Callable[[], Any]], launches: int) -> Workload:
    return LaunchLoop(calls, launches, ctx.stream, ctx.clock, ctx.max_in_flight)


def _modes(ctx: FloorContext, call: Callable[[], Any], no_graph: str | None = None) -> LayerWorkloads:
    """The eager workload of ``call`` and, unless ``no_graph`` says why not, its graph's replay."""
    with ctx.stream:
        call()
    workloads = {"eager": _loop(ctx, [call] * ctx.nodes, ctx.nodes)}
    if no_graph is None:
        graph = _graph(ctx, call, ctx.nodes)
        workloads["graph"] = _loop(ctx, [partial(graph.launch, ctx.stream)], ctx.nodes)
    return LayerWorkloads(workloads, ctx.nodes, no_graph)


def _module(ctx: FloorContext) -> Any:
    if "module" not in ctx.shared:
        ctx.shared["module"] = cupy.RawModule(code=ctx.source)
    return ctx.shared["module"]


def build_raw(ctx: FloorContext, args: int) -> LayerWorkloads:
    kernel = _module(ctx).get_function(kernel_name(args))
    return _modes(ctx, partial(kernel, (1,), (1,), (ctx.buffer,) * args))


def build_raw_stream(ctx: FloorContext, args: int) -> LayerWorkloads:
    kernel = _module(ctx).get_function(kernel_name(args))
    call = partial(kernel, (1,), (1,), (ctx.buffer,) * args, stream=ctx.stream)
    return _modes(ctx, call, "its graph is cupy_raw's: a replay does not see how the kernel was called")


def _arrays(ctx: FloorContext) -> tuple[Any, Any]:
    with ctx.stream:
        return cupy.ones(ELEMENTS, dtype=cupy.float32), cupy.zeros(ELEMENTS, dtype=cupy.float32)


def build_elementwise(ctx: FloorContext, _args: int) -> LayerWorkloads:
    kernel = cupy.ElementwiseKernel("T x", "T y", "y = x", "lb_floor_copy")
    x, y = _arrays(ctx)
    return _modes(ctx, partial(kernel, x, y))


def build_ufunc(ctx: FloorContext, _args: int) -> LayerWorkloads:
    x, y = _arrays(ctx)
    return _modes(ctx, partial(cupy.multiply, x, x, out=y))


def build_gpu(ctx: FloorContext, _args: int) -> LayerWorkloads:
    kernel = _module(ctx).get_function(kernel_name(0))
    graph = _graph(ctx, partial(kernel, (1,), (1,), ()), ctx.gpu_nodes)
    replay = _loop(ctx, [partial(graph.launch, ctx.stream)], ctx.gpu_nodes)
    return LayerWorkloads({"graph": replay}, ctx.gpu_nodes, "the GPU's per-node floor is a graph replay only")
