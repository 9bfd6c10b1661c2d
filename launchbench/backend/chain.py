"""What both prepared cases (one chain, or a chain at many shapes) do with a built chain: refuse a case
whose buffers would not fit, fork and join its auxiliary streams, reset and snapshot its outputs, and
time the timing loop's own cost."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import cupy
import numpy as np

from launchbench.backend.base import CaseRefused
from launchbench.backend.copy_many import copy_pairs
from launchbench.backend.workload import LaunchLoop
from launchbench.errors import LaunchbenchError
from launchbench.kinds.base import BuiltStep
from launchbench.measure.clock import Clock

MEMORY_HEADROOM = 0.9  # refuse a case whose buffers would take more than this share of free memory
HARNESS_ITERS = 20_000

Calls = Sequence[Callable[[], Any]]
StreamSource = Callable[[int], cupy.cuda.Stream]


def issue(calls: Calls) -> None:
    """Run every call once, in order."""
    for call in calls:
        call()


def _noop() -> None:
    return None


def refuse_unless_fits(needed: int, detail: str = "") -> None:
    """CaseRefused where ``needed`` bytes of buffers exceed MEMORY_HEADROOM of the GPU's free memory;
    ``detail`` follows "for its buffers" in the message."""
    free, total = cupy.cuda.runtime.memGetInfo()
    if needed > MEMORY_HEADROOM * free:
        raise CaseRefused(
            f"case needs {needed / 2**30:.2f} GiB of GPU memory for its buffers{detail}; "
            f"{free / 2**30:.2f} GiB of {total / 2**30:.2f} GiB is free"
        )


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


def harness_cost(stream: cupy.cuda.Stream, clock: Clock, max_in_flight: int) -> float:
    """Seconds per iteration that the timing loop costs around an empty call (median of 5 batches)."""
    loop = LaunchLoop([_noop], 1, stream, clock, max_in_flight)
    costs = []
    for _ in range(5):
        timing = loop.run_batch(HARNESS_ITERS)
        costs.append(timing.wall_s / HARNESS_ITERS)
    return float(np.median(costs))


def reset_steps(stream: cupy.cuda.Stream, steps: Sequence[BuiltStep]) -> None:
    """Every step's outputs back to their initial contents (on ``stream``, then waited for): the device
    buffers together by copy_many.copy_pairs, the rest one by one, then each step's own reset calls."""
    with stream:
        for target, initial in copy_pairs([pair for built in steps for pair in built.resets]):
            target[...] = initial
        for built in steps:
            for call in built.reset_calls:
                call()
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


def debug_dot(graph: Any) -> str:
    """CuPy's own DOT of an instantiated graph (Graph.debug_dot_str, CuPy 14 or newer)."""
    if not hasattr(graph, "debug_dot_str"):
        raise LaunchbenchError("this CuPy has no Graph.debug_dot_str (CuPy 14 or newer has it)")
    text = graph.debug_dot_str()
    return text.decode() if isinstance(text, bytes) else text
