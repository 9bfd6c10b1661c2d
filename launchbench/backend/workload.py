"""Timing one mode of a case: a flat list of launch calls per iteration, run back to back in batches
with the queue bounded, timed by the injected clock (wall, thread CPU) and CUDA events (GPU)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import cupy

from launchbench.backend.window import LaunchWindow
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import BatchTiming

CUDA_ERROR_NOT_READY = 600


def _unwrap(call: Callable[[], Any]) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A one-call chain as (function, positional arguments): calling a ``functools.partial`` costs about
    0.05 µs more than calling its function, 3–6% of a one-node graph launch (measured on the H200 by
    benchmarks/fidelity.py against a bare ``graph.launch(stream)`` loop)."""
    if isinstance(call, partial) and not call.keywords:
        return call.func, tuple(call.args)
    return call, ()


def poll(query: Callable[[int], int], handle: int, raise_error: Callable[[], Any]) -> None:
    """Busy-poll a CUDA query (eventQuery, streamQuery) until the work is done: completion is seen within
    about a microsecond, whatever scheduling policy (spin, yield or blocking) the driver chose for this
    context. CuPy returns cudaErrorNotReady instead of raising it; any other error is raised by
    ``raise_error`` (a synchronize)."""
    while True:
        status = query(handle)
        if status == 0:
            return
        if status != CUDA_ERROR_NOT_READY:
            raise_error()  # raises the real error (e.g. an illegal address in the chain)
            return


def timed_batch(
    stream: cupy.cuda.Stream, clock: Clock, start: Any, end: Any, launch: Callable[[int], None], iters: int
) -> BatchTiming:
    """``launch(iters)`` on ``stream`` between the events ``start`` and ``end``: its wall time (to the end
    event's completion, polled), the thread's CPU time while launching, and the GPU time between them."""
    with stream:
        start.record(stream)
        wall0 = clock.wall()
        cpu0 = clock.thread()
        launch(iters)
        cpu1 = clock.thread()
        end.record(stream)
        poll(cupy.cuda.runtime.eventQuery, end.ptr, end.synchronize)
        wall1 = clock.wall()
    gpu_s = cupy.cuda.get_elapsed_time(start, end) * 1e-3
    return BatchTiming(iters, wall1 - wall0, cpu1 - cpu0, gpu_s)


class LaunchLoop:
    """Launches ``calls`` (one iteration) ``iters`` times; implements the sampler's Workload protocol."""

    def __init__(
        self,
        calls: Sequence[Callable[[], Any]],
        launches_per_iter: int,
        stream: cupy.cuda.Stream,
        clock: Clock,
        max_in_flight: int,
    ):
        self.calls = list(calls)
        self.launches_per_iter = launches_per_iter
        self.stream = stream
        self.clock = clock
        self.window = LaunchWindow(stream, max_in_flight)
        submissions = len(self.calls)
        if submissions >= self.window.block:
            self._chunks = [
                self.calls[i : i + self.window.block] for i in range(0, submissions, self.window.block)
            ]
            self._iters_per_mark = 0
        else:
            self._chunks = [self.calls]
            self._iters_per_mark = max(1, self.window.block // max(1, submissions))
        # a one-call chain (a graph replay, a single kernel) is called directly, outside the timed loop's setup
        self._only = _unwrap(self.calls[0]) if submissions == 1 else None
        self._start = cupy.cuda.Event()
        self._end = cupy.cuda.Event()

    def _launch(self, iters: int) -> None:
        window = self.window
        window.reset()
        if self._iters_per_mark:
            calls = self.calls
            only = self._only
            done = 0
            while done < iters:
                n = min(self._iters_per_mark, iters - done)
                if only is not None:
                    function, args = only
                    if len(args) == 1:  # a graph replay: graph.launch(stream)
                        arg = args[0]
                        for _ in range(n):
                            function(arg)
                    else:
                        for _ in range(n):
                            function(*args)
                else:
                    for _ in range(n):
                        for call in calls:
                            call()
                window.mark()
                done += n
        else:
            chunks = self._chunks
            for _ in range(iters):
                for chunk in chunks:
                    for call in chunk:
                        call()
                    window.mark()

    def run_batch(self, iters: int) -> BatchTiming:
        return timed_batch(self.stream, self.clock, self._start, self._end, self._launch, iters)

    def run_latency(self) -> float:
        """One iteration on an idle stream, launch to completion (the stream polled until it is done).
        Nothing but the chain's own launches lies inside the measured time: a chain that fits in one
        block of the launch window is launched without the window's mark, and no end event is recorded.
        Both cost more than the one-launch chain itself on the H200: with them, an empty kernel's
        latency read 52 µs against 14 µs for a bare launch-and-synchronize loop (benchmarks/fidelity.py).
        A chain longer than a block keeps its marks, which bound the queue."""
        clock = self.clock
        with self.stream:
            self.stream.synchronize()
            wall0 = clock.wall()
            if self._iters_per_mark:
                for call in self.calls:
                    call()
            else:
                self._launch(1)
            poll(cupy.cuda.runtime.streamQuery, self.stream.ptr, self.stream.synchronize)
            return clock.wall() - wall0
