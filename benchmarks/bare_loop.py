"""The reference for benchmarks/fidelity.py: the quickstart's chains written out by hand in plain CuPy, in a
process that imports nothing of launchbench (this file must keep it so: the fidelity test checks).

For each case given on the command line as KIND:LENGTH (empty or scale, in the order given, as one
launchbench pass measures them), in one process: the chain launched eagerly (a RawKernel of an empty
kernel, or `cupy.multiply(x, alpha, out=x)` on 500k float32), and the same calls captured with
`Stream.begin_capture()` into a graph, replayed back to back. Each mode is warmed up for 0.1 s, then timed in
SAMPLES batches of at least 5 ms between `stream.synchronize()` calls with `time.perf_counter()`; the
launches in flight stay bounded (a synchronize every 1,024 eager launches or 256 graph launches). Prints one JSON line per case and
mode: the median and the samples, seconds per launch, and the CPU the thread ran on.

    python benchmarks/bare_loop.py empty:1 empty:10 scale:1000 ...
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import cupy
import numpy as np

SAMPLES = 15
SAMPLE_TIME = 0.005
WARMUP_TIME = 0.1
EAGER_WINDOW = 1024  # eager launches between synchronizes (host-bound chains never fill the queue)
REPLAY_WINDOW = 256  # graph launches between synchronizes: the launch queue never fills
SIZE = 500_000
ALPHA = 0.999
EMPTY = 'extern "C" __global__ void bare_empty() {}'


class Chain:
    def __init__(self, kind: str, length: int, stream: cupy.cuda.Stream):
        self.kind, self.length, self.stream = kind, length, stream
        if kind == "empty":
            self.kernel = cupy.RawKernel(EMPTY, "bare_empty")
        else:
            rng = np.random.default_rng(0)
            self.x = cupy.asarray(rng.uniform(0.5, 1.5, SIZE).astype(np.float32))
            self.alpha = np.float32(ALPHA)
        with stream:
            self.once()
            stream.synchronize()
            stream.begin_capture()
            self.once()
            self.graph = stream.end_capture()
            self.graph.upload(stream)
            self.graph.launch(stream)
            stream.synchronize()

    def once(self) -> None:
        if self.kind == "empty":
            kernel, stream = self.kernel, self.stream
            for _ in range(self.length):
                kernel((1,), (1,), (), stream=stream)
        else:
            x, alpha = self.x, self.alpha
            for _ in range(self.length):
                cupy.multiply(x, alpha, out=x)

    def eager(self, iters: int) -> None:
        per_sync = max(1, EAGER_WINDOW // self.length)
        for i in range(iters):
            self.once()
            if (i + 1) % per_sync == 0:
                self.stream.synchronize()

    def replay(self, iters: int) -> None:
        graph, stream = self.graph, self.stream
        for i in range(iters):
            graph.launch(stream)
            if (i + 1) % REPLAY_WINDOW == 0:
                stream.synchronize()

    def batch(self, run, iters: int) -> float:
        with self.stream:
            self.stream.synchronize()
            start = time.perf_counter()
            run(iters)
            self.stream.synchronize()
            return time.perf_counter() - start

    def samples(self, run) -> list[float]:
        iters, begin = 1, time.perf_counter()
        while True:  # warm-up, and iterations per sample
            took = self.batch(run, iters)
            if took < SAMPLE_TIME:
                iters *= 2
            elif time.perf_counter() - begin >= WARMUP_TIME:
                break
        return [self.batch(run, iters) / (iters * self.length) for _ in range(SAMPLES)]


def thread_cpu() -> int:
    with open("/proc/thread-self/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[36])


def main(specs: list[str]) -> None:
    stream = cupy.cuda.Stream(non_blocking=True)
    for spec in specs:
        kind, length = spec.split(":")
        chain = Chain(kind, int(length), stream)
        for mode, run in (("eager", chain.eager), ("graph", chain.replay)):
            values = chain.samples(run)
            row = {"case": f"{kind}/length={length}", "mode": mode, "median_s": statistics.median(values)}
            print(json.dumps({**row, "samples_s": values, "cpu": thread_cpu()}), flush=True)
        del chain


if __name__ == "__main__":
    main(sys.argv[1:])
