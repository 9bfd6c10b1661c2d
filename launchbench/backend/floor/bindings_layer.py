"""Layer ``bindings``: cuLaunchKernel and cuGraphLaunch through cuda-bindings from Python, the kernel
arguments given as cuda-bindings documents them (values with their ctypes types)."""

from __future__ import annotations

import ctypes
from functools import partial
from typing import Any

from launchbench.backend.floor.base import FloorContext, LayerUnavailable, LayerWorkloads, kernel_name
from launchbench.backend.workload import LaunchLoop


def _ok(result: Any, what: str) -> Any:
    """The values of a cuda-bindings result tuple; LayerUnavailable where its error is not CUDA_SUCCESS."""
    from cuda.bindings import driver

    error, *values = result if isinstance(result, tuple) else (result,)
    if error != driver.CUresult.CUDA_SUCCESS:
        raise LayerUnavailable(f"{what} failed through cuda-bindings: {error}")
    return values[0] if len(values) == 1 else values


def _driver() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise LayerUnavailable(f"cuda-bindings is not installed ({exc})") from exc
    return driver


def _capture(driver: Any, stream: Any, launch: Any, nodes: int) -> tuple[Any, Any]:
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    _ok(driver.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
    for _ in range(nodes):
        launch()
    graph = _ok(driver.cuStreamEndCapture(stream), "cuStreamEndCapture")
    return graph, _ok(driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")


def build_bindings(ctx: FloorContext, args: int) -> LayerWorkloads:
    driver = _driver()
    if ctx.ptx is None:
        raise LayerUnavailable(ctx.ptx_reason or "no PTX for the kernels")
    image = ctypes.create_string_buffer(ctx.ptx)
    module = _ok(driver.cuModuleLoadData(ctypes.addressof(image)), "cuModuleLoadData")
    function = _ok(driver.cuModuleGetFunction(module, kernel_name(args).encode()), "cuModuleGetFunction")
    stream = driver.CUstream(ctx.stream.ptr)
    params: Any = ((ctx.pointer,) * args, (ctypes.c_void_p,) * args) if args else 0
    launch = partial(driver.cuLaunchKernel, function, 1, 1, 1, 1, 1, 1, 0, stream, params, 0)
    _ok(launch(), "cuLaunchKernel")
    ctx.closers.append(lambda: driver.cuModuleUnload(module))  # after the graph is destroyed
    graph, graph_exec = _capture(driver, stream, launch, ctx.nodes)
    ctx.closers.append(lambda: (driver.cuGraphExecDestroy(graph_exec), driver.cuGraphDestroy(graph)))
    replay = partial(driver.cuGraphLaunch, graph_exec, stream)
    _ok(replay(), "cuGraphLaunch")
    loop = partial(LaunchLoop, stream=ctx.stream, clock=ctx.clock, max_in_flight=ctx.max_in_flight)
    return LayerWorkloads(
        {"eager": loop([launch] * ctx.nodes, ctx.nodes), "graph": loop([replay], ctx.nodes)}, ctx.nodes
    )
