"""Layer ``c``: cuLaunchKernel and cuGraphLaunch called in native.c's loops, the queue bounded there as
the Python layers bound it (a block of half the launches allowed in flight, an event after each; a
graph replay counts as one launch, whatever its nodes)."""

from __future__ import annotations

from collections.abc import Callable

import cupy

from launchbench.backend.floor.base import FloorContext, LayerUnavailable, LayerWorkloads, kernel_name
from launchbench.backend.floor.native import NativeLibrary, build_library, kernel_params
from launchbench.backend.workload import poll, timed_batch
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import BatchTiming


class NativeLoop:
    """A workload whose whole batch is one call into the C library: ``launch(iters)``."""

    def __init__(
        self, launch: Callable[[int], None], launches_per_iter: int, stream: cupy.cuda.Stream, clock: Clock
    ):
        self.launch = launch
        self.launches_per_iter = launches_per_iter
        self.stream = stream
        self.clock = clock
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()

    def run_batch(self, iters: int) -> BatchTiming:
        return timed_batch(self.stream, self.clock, self._start, self._end, self.launch, iters)

    def run_latency(self) -> float:
        """One iteration on an idle stream, launch to completion (the stream polled until it is done)."""
        self.stream.synchronize()
        begin = self.clock.wall()
        self.launch(1)
        poll(cupy.cuda.runtime.streamQuery, self.stream.ptr, self.stream.synchronize)
        return self.clock.wall() - begin


def library(ctx: FloorContext) -> NativeLibrary:
    """The C library, built and opened once per context."""
    if "native" not in ctx.shared:
        if ctx.workdir is None:
            raise LayerUnavailable("no work directory to build the C library in")
        ctx.shared["native"] = NativeLibrary(build_library(ctx.workdir))
    native: NativeLibrary = ctx.shared["native"]
    return native


def build_c(ctx: FloorContext, args: int) -> LayerWorkloads:
    if ctx.ptx is None:
        raise LayerUnavailable(ctx.ptx_reason or "no PTX for the kernels")
    lib = library(ctx)
    function = lib.function(ctx.ptx, kernel_name(args))
    params, keep = kernel_params(ctx.pointer, args)
    stream, nodes = ctx.stream.ptr, ctx.nodes
    block = max(1, ctx.max_in_flight // 2)
    graph = lib.graph(function, stream, params, nodes)
    ctx.closers.append(lambda: lib.free_graph(graph))
    ctx.shared.setdefault("keep", []).append(keep)  # the argument arrays outlive every launch

    def eager(iters: int) -> None:
        lib.launch(function, stream, params, iters * nodes, block)

    def replay(iters: int) -> None:  # a replay is one launch, as in workload.LaunchLoop's graph loops
        lib.replay(graph, stream, iters, block)

    return LayerWorkloads(
        {
            "eager": NativeLoop(eager, nodes, ctx.stream, ctx.clock),
            "graph": NativeLoop(replay, nodes, ctx.stream, ctx.clock),
        },
        nodes,
    )
