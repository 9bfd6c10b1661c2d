"""A worker's fixed reference: the same small measurement read when the worker starts and after every
case, so a case that leaves the process in another state (later graphs replaying slower, launches costing
more) shows in the next reading instead of silently in every later case's numbers.

The reference is written as a bare CuPy loop would be (no launch window, no events): a 100-node graph of
empty kernels captured once with ``Stream.begin_capture`` and replayed back to back (GPU-bound: the GPU's
own per-node cost), and 100 eager empty-kernel launches (the launching thread's cost). One reading takes
about 15 ms. Never prints.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import cupy

from launchbench.kinds.empty import EMPTY_NAME, EMPTY_SOURCE
from launchbench.measure.clock import Clock
from launchbench.results.schema import CanaryReading

NODES = 100
GRAPH_REPLAYS = 20  # per batch: 2,000 nodes, about 1 ms of GPU work, far more than the host's launch cost
BATCHES = 7


class ReferenceCanary:
    """The reference on ``stream``, built once (its graph lives as long as the worker)."""

    def __init__(self, stream: cupy.cuda.Stream, clock: Clock):
        self.stream = stream
        self.clock = clock
        self.kernel = cupy.RawKernel(EMPTY_SOURCE, EMPTY_NAME)
        self._launches()
        stream.synchronize()
        stream.begin_capture()
        self._launches()
        self.graph: Any = stream.end_capture()
        self.graph.upload(stream)
        self.graph.launch(stream)
        stream.synchronize()

    def _launches(self) -> None:
        kernel, stream = self.kernel, self.stream
        for _ in range(NODES):
            kernel((1,), (1,), (), stream=stream)

    def _replays(self) -> None:
        graph, stream = self.graph, self.stream
        for _ in range(GRAPH_REPLAYS):
            graph.launch(stream)

    def _median(self, work: Callable[[], None], per: int) -> float:
        """Seconds per unit of ``work`` (``per`` units a call): the median of BATCHES synchronized batches."""
        stream, clock = self.stream, self.clock
        work()
        stream.synchronize()
        times = []
        for _ in range(BATCHES):
            start = clock.wall()
            work()
            stream.synchronize()
            times.append((clock.wall() - start) / per)
        return statistics.median(times)

    def read(self) -> CanaryReading:
        return CanaryReading(
            graph_s_per_node=self._median(self._replays, GRAPH_REPLAYS * NODES),
            eager_s_per_launch=self._median(self._launches, NODES),
        )
