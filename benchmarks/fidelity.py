"""Fidelity: launchbench's numbers against a bare, hand-written CuPy loop, in one process on the GPU.

For every case of a scenario (default: the quickstart), the bare loop launches the same kernels with
plain CuPy calls (no launchbench code), in batches of the same size launchbench used, synchronizing
with stream.synchronize(); launchbench measures the case through its own backend in between two bare
rounds. The ratio of median wall time per launch (launchbench / bare) is printed per case and mode.

    python benchmarks/fidelity.py [scenarios/quickstart.yaml] [--out results/fidelity]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cupy
import numpy as np
import pandas as pd
from _report import write_report

from launchbench.backend.cupy_backend import CupyBackend
from launchbench.environment import collect_environment
from launchbench.execute import execute_case
from launchbench.measure.clock import SystemClock
from launchbench.results.schema import WALL
from launchbench.scenario.expand import expand_scenario

BARE_SAMPLES = 30
EAGER_BOUNDS = (0.93, 1.07)
GRAPH_BOUNDS = (0.95, 1.05)


class BareLoop:
    """The quickstart's chains written out by hand: one kind of kernel, launched `length` times."""

    def __init__(self, kind: str, length: int, size: int | None, alpha: float):
        self.length = length
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.kind = kind
        with self.stream:
            if kind == "empty":
                self.kernel = cupy.RawKernel('extern "C" __global__ void bare_empty() {}', "bare_empty")
            else:
                self.x = cupy.asarray(np.random.default_rng(0).uniform(0.5, 1.5, size).astype(np.float32))
                self.alpha = np.float32(alpha)
            self._eager(1)
            self.stream.synchronize()
            self.stream.begin_capture()
            self._eager(1)
            self.graph = self.stream.end_capture()
            self.graph.upload(self.stream)
            self.graph.launch(self.stream)
            self.stream.synchronize()

    def _eager(self, iters: int) -> None:
        n = iters * self.length
        if self.kind == "empty":
            kernel = self.kernel
            for _ in range(n):
                kernel((1,), (1,), ())
        else:
            x, alpha = self.x, self.alpha
            for _ in range(n):
                cupy.multiply(x, alpha, out=x)

    def _graph(self, iters: int) -> None:
        graph, stream = self.graph, self.stream
        for _ in range(iters):
            graph.launch(stream)

    def sample(self, mode: str, iters: int) -> float:
        """Wall seconds per launch over one batch of `iters` chain iterations."""
        with self.stream:
            self.stream.synchronize()
            start = time.perf_counter()
            if mode == "eager":
                self._eager(iters)
            else:
                self._graph(iters)
            self.stream.synchronize()
            return (time.perf_counter() - start) / (iters * self.length)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/quickstart.yaml")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    backend = CupyBackend(0, SystemClock())
    env = collect_environment(0)
    rows = []
    for case in expand_scenario(args.scenario):
        step = case.steps[0]
        bare = BareLoop(step.kind, case.launches_per_iter, getattr(step, "size", None), getattr(step, "alpha", 1.0))
        result = execute_case(backend, case, backend.clock)
        for mode in ("eager", "graph"):
            iters = result.modes[mode].iters_per_sample
            for _ in range(3):
                bare.sample(mode, iters)  # warm-up
            bare_samples = [bare.sample(mode, iters) for _ in range(BARE_SAMPLES)]
            lb = np.median(np.asarray(result.modes[mode].samples[WALL]) / case.launches_per_iter)
            ref = float(np.median(bare_samples))
            low, high = EAGER_BOUNDS if mode == "eager" else GRAPH_BOUNDS
            ratio = lb / ref
            rows.append(
                {
                    "case": case.case_id,
                    "mode": mode,
                    "iters_per_sample": iters,
                    "launchbench_us_per_launch": lb * 1e6,
                    "bare_loop_us_per_launch": ref * 1e6,
                    "ratio": ratio,
                    "bounds": f"{low}-{high}",
                    "within": low <= ratio <= high,
                    "outputs_match": result.outputs_match,
                }
            )
    table = pd.DataFrame(rows)
    header = (
        f"fidelity on {env['gpu']['name']} (driver {env['driver']}, CUDA {env['cuda_runtime']}, CuPy {env['cupy']}), "
        f"{env['time']}\n"
    )
    write_report(table, header, args.out, "fidelity", digits=3)
    raise SystemExit(0 if table["within"].all() else 1)


if __name__ == "__main__":
    main()
