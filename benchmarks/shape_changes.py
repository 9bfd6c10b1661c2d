"""Shape changes: the batch size changes between iterations. Four strategies for the same chain:

- eager:     launch the chain kernel by kernel on views of the current shape;
- recapture: capture, instantiate and launch a new graph whenever the shape changes;
- cache:     one graph per shape, captured the first time the shape is seen, then replayed;
- update:    one executable graph, updated in place with cudaGraphExecUpdate (cuda-bindings, on the
             `graphExec` handle CuPy's Graph exposes) from a freshly captured (not instantiated) graph
             whenever the shape changes.

For each pattern of shape changes (how many distinct batch sizes, how many iterations between changes)
it reports wall time per iteration of each strategy (median of several repetitions), checks every
strategy's final buffers against eager's (same initial data, same shape sequence), and names the winner.

    python benchmarks/shape_changes.py --out results/shape_changes
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import cupy
import numpy as np
import pandas as pd
from _report import write_report
from cuda.bindings import runtime as cudart

from launchbench.backend.gpu_probe import collect_environment
from launchbench.results.environment import describe_environment

FEATURES = 1024
CHAIN = 8  # steps per iteration: even steps one kernel, odd steps two
KERNELS = (CHAIN + 1) // 2 + 2 * (CHAIN // 2)  # 12 kernels per iteration
ITERATIONS = 256
REPEATS = 5
PATTERNS = [(4, 1), (4, 16), (4, 64), (64, 1), (64, 16), (256, 1)]  # (distinct shapes, iterations per shape)


def check(result: tuple) -> object:
    if int(result[0]) != 0:
        raise RuntimeError(f"CUDA call failed: {cudart.cudaGetErrorName(result[0])[1].decode()}")
    return result[1] if len(result) == 2 else result[1:]


class Chain:
    """CHAIN steps (KERNELS in-place elementwise kernels) over the first `batch` rows of preallocated buffers."""

    def __init__(self, max_batch: int, stream: cupy.cuda.Stream):
        self.stream = stream
        rng = np.random.default_rng(0)
        self.x0 = cupy.asarray(rng.uniform(0.5, 1.5, (max_batch, FEATURES)).astype(np.float32))
        self.y0 = cupy.asarray(rng.uniform(0.5, 1.5, (max_batch, FEATURES)).astype(np.float32))
        self.x = self.x0.copy()
        self.y = self.y0.copy()
        self.a = np.float32(0.999)
        self.b = np.float32(0.5)

    def reset(self) -> None:
        with self.stream:  # on the chain's stream, so it is done before the timed kernels start
            self.x[...] = self.x0
            self.y[...] = self.y0
        self.stream.synchronize()

    def launch(self, batch: int) -> None:
        x, y = self.x[:batch], self.y[:batch]
        for i in range(CHAIN):
            if i % 2 == 0:
                cupy.multiply(x, self.a, out=x)
            else:
                cupy.add(x, y, out=y)
                cupy.multiply(y, self.b, out=y)

    def capture(self, batch: int) -> cupy.cuda.Graph:
        self.stream.begin_capture()
        self.launch(batch)
        return self.stream.end_capture()

    def capture_raw(self, batch: int) -> object:
        """A captured but not instantiated graph (for cudaGraphExecUpdate)."""
        mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeRelaxed
        check(cudart.cudaStreamBeginCapture(self.stream.ptr, mode))
        self.launch(batch)
        return check(cudart.cudaStreamEndCapture(self.stream.ptr))


def shape_sequence(distinct: int, per_shape: int, max_batch: int) -> list[int]:
    sizes = [max(1, int(round(max_batch * (i + 1) / distinct))) for i in range(distinct)]
    order = np.random.default_rng(1).permutation(distinct)
    seq: list[int] = []
    while len(seq) < ITERATIONS:
        for index in order:
            seq.extend([sizes[index]] * per_shape)
    return seq[:ITERATIONS]


def run_eager(chain: Chain, seq: list[int]) -> None:
    for batch in seq:
        chain.launch(batch)


def run_recapture(chain: Chain, seq: list[int]) -> None:
    graph, current = None, None
    retired = []  # replaced graphs stay alive until the stream is idle
    for batch in seq:
        if batch != current:
            if graph is not None:
                retired.append(graph)
            graph, current = chain.capture(batch), batch
        graph.launch(chain.stream)
    chain.stream.synchronize()


def run_cache(chain: Chain, seq: list[int]) -> None:
    cache: dict[int, cupy.cuda.Graph] = {}
    for batch in seq:
        graph = cache.get(batch)
        if graph is None:
            graph = cache[batch] = chain.capture(batch)
        graph.launch(chain.stream)


def run_update(chain: Chain, seq: list[int]) -> None:
    graph = chain.capture(seq[0])
    current = seq[0]
    for batch in seq:
        if batch != current:
            new = chain.capture_raw(batch)
            try:
                err, info = cudart.cudaGraphExecUpdate(graph.graphExec, new)
                if int(err) != 0:
                    raise RuntimeError(f"cudaGraphExecUpdate refused: {info.result}")
            finally:
                cudart.cudaGraphDestroy(new)
            current = batch
        graph.launch(chain.stream)


STRATEGIES: dict[str, Callable[[Chain, list[int]], None]] = {
    "eager": run_eager,
    "recapture": run_recapture,
    "cache": run_cache,
    "update": run_update,
}


def timed(
    chain: Chain, strategy: Callable[[Chain, list[int]], None], seq: list[int]
) -> tuple[float, np.ndarray, np.ndarray]:
    chain.reset()
    with chain.stream:
        start = time.perf_counter()
        strategy(chain, seq)
        chain.stream.synchronize()
        elapsed = time.perf_counter() - start
    return elapsed / len(seq), cupy.asnumpy(chain.x), cupy.asnumpy(chain.y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    stream = cupy.cuda.Stream(non_blocking=True)
    chain = Chain(args.max_batch, stream)
    with stream:
        for strategy in STRATEGIES.values():  # warm-up: compile kernels, fill the allocator
            timed(chain, strategy, shape_sequence(4, 1, args.max_batch)[:16])
    rows = []
    for distinct, per_shape in PATTERNS:
        seq = shape_sequence(distinct, per_shape, args.max_batch)
        changes = sum(1 for a, b in zip(seq, seq[1:]) if a != b)
        times: dict[str, list[float]] = {name: [] for name in STRATEGIES}
        reference = None
        matches: dict[str, bool] = {}
        for _ in range(REPEATS):
            for name, strategy in STRATEGIES.items():  # interleaved, so drift hits all alike
                per_iter, x, y = timed(chain, strategy, seq)
                times[name].append(per_iter)
                if name == "eager":
                    reference = (x, y)
                else:
                    ok = np.array_equal(x, reference[0]) and np.array_equal(y, reference[1])
                    matches[name] = matches.get(name, True) and ok
        medians = {name: float(np.median(v)) * 1e6 for name, v in times.items()}
        winner = min(medians, key=medians.get)
        rows.append(
            {
                "distinct_shapes": distinct,
                "iterations_per_shape": per_shape,
                "shape_changes": changes,
                "iterations": len(seq),
                **{f"{name}_us_per_iter": value for name, value in medians.items()},
                "fastest": winner,
                "outputs_match": all(matches.values()),
            }
        )
    table = pd.DataFrame(rows)
    env = collect_environment(0)
    bindings = f"cuda-bindings {env['cuda_bindings']}"
    header = (
        f"shape changes on {describe_environment(env, bindings)}, {env['time']}; chain of {KERNELS} elementwise kernels ({CHAIN} steps) on batch×{FEATURES} "
        f"float32, batch up to {args.max_batch}; median of {REPEATS} repetitions of {ITERATIONS} iterations\n"
    )
    write_report(table, header, args.out, "shape_changes", digits=1)
    raise SystemExit(0 if table["outputs_match"].all() else 1)


if __name__ == "__main__":
    main()
