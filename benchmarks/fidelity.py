"""Fidelity: launchbench's numbers against a bare, hand-written CuPy loop, in one process on the GPU.

For every case of a scenario (default: the quickstart), launchbench's backend prepares the case (its
launch calls, queue window, CUDA events, captured graph) and a bare loop launches the same kernels with
plain CuPy calls and `stream.synchronize()` around `time.perf_counter()`, on the same stream (one made
first in the process, as every launchbench case uses). launchbench's own sampler then
measures four workloads in interleaved rounds (A B C D, D C B A, …, 5 samples each per round, after its
usual warm-up, clock settling and calibration): launchbench eager and graph, bare eager and graph.

The host this runs on changes speed within seconds, so the ratio is taken per round (median of the round's
launchbench samples over the median of the same round's bare samples, taken tens of milliseconds apart)
and the case's ratio is the median over rounds; the ratio of the pooled medians is printed beside it.
Every captured graph's outputs are checked against eager ones as in a run.

    python benchmarks/fidelity.py [scenarios/quickstart.yaml] [--out results/fidelity] [--max-time S]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cupy
import numpy as np
import pandas as pd
from _paired import round_ratios
from _report import write_report

from launchbench.backend.cupy_backend import CupyBackend
from launchbench.measure.sampler import SAMPLES_PER_ROUND, BatchTiming, Sampler
from launchbench.results.environment import describe_environment
from launchbench.run.worker import cupy_backend
from launchbench.scenario.core import Case
from launchbench.scenario.expand import expand_scenario

MODES = ("eager", "graph")
EAGER_BOUNDS = (0.93, 1.07)
GRAPH_BOUNDS = (0.95, 1.05)


class BareLoop:
    """One of the quickstart's chains written out by hand: one kind of kernel, launched `length` times,
    eagerly or as a graph captured from those same calls. Implements the sampler's Workload protocol."""

    def __init__(
        self, kind: str, length: int, size: int | None, alpha: float, mode: str, stream: cupy.cuda.Stream
    ):
        self.launches_per_iter = length
        self.length = length
        self.mode = mode
        self.kind = kind
        self.stream = stream
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

    def run_batch(self, iters: int) -> BatchTiming:
        with self.stream:
            self.stream.synchronize()
            start = time.perf_counter()
            if self.mode == "eager":
                self._eager(iters)
            else:
                self._graph(iters)
            self.stream.synchronize()
            return BatchTiming(iters, time.perf_counter() - start, 0.0, None)

    def run_latency(self) -> float:
        return self.run_batch(1).wall_s


def bare_loop(case: Case, mode: str, stream: cupy.cuda.Stream) -> BareLoop:
    step = case.steps[0]
    return BareLoop(
        step.kind,
        case.launches_per_iter,
        getattr(step, "size", None),
        getattr(step, "alpha", 1.0),
        mode,
        stream,
    )


def measure_case(backend: CupyBackend, case: Case, max_time: float) -> list[dict[str, object]]:
    # every workload is sampled until the budget ends, so the four stay in step round by round
    settings = case.measure.model_copy(
        update={
            "max_time": max_time,
            "target_noise": 1e-9,
            "latency_target_noise": 1e-9,
            "max_samples": 10_000_000,
        }
    )
    prepared = backend.prepare(case)
    try:
        workloads = {
            "launchbench eager": prepared.workloads["eager"],
            "launchbench graph": prepared.workloads["graph"],
            # the bare loops launch on launchbench's own stream: on the H200 the stream alone moves a small
            # graph's replay by 30% (a process's first streams are faster) and a one-node graph's launch by 9%
            "bare eager": bare_loop(case, "eager", backend.stream(0)),
            "bare graph": bare_loop(case, "graph", backend.stream(0)),
        }
        outcome = Sampler(settings, backend.clock, backend.monitor).run(workloads)
        check = prepared.check_outputs()
    finally:
        prepared.close()
    rows = []
    for mode in MODES:
        ours, bare = outcome.modes[f"launchbench {mode}"], outcome.modes[f"bare {mode}"]
        per_launch = 1 / case.launches_per_iter
        ratios = round_ratios(ours.wall, bare.wall, SAMPLES_PER_ROUND)
        ratio = float(np.median(ratios))
        latency_ratios = round_ratios(ours.latency, bare.latency, SAMPLES_PER_ROUND)
        low, high = EAGER_BOUNDS if mode == "eager" else GRAPH_BOUNDS
        rows.append(
            {
                "case": case.case_id,
                "mode": mode,
                "iters_per_sample": ours.iters_per_sample,
                "rounds": len(ratios),
                "launchbench_us_per_launch": float(np.median(ours.wall)) * per_launch * 1e6,
                "bare_loop_us_per_launch": float(np.median(bare.wall)) * per_launch * 1e6,
                "ratio": ratio,
                "ratio_p25": float(np.percentile(ratios, 25)),
                "ratio_p75": float(np.percentile(ratios, 75)),
                "pooled_ratio": float(np.median(ours.wall) / np.median(bare.wall)),
                "bounds": f"{low}-{high}",
                "within": low <= ratio <= high,
                "outputs_match": check.match is not False,
                "launchbench_latency_us": float(np.median(ours.latency)) * 1e6,
                "bare_loop_latency_us": float(np.median(bare.latency)) * 1e6,
                "latency_ratio": float(np.median(latency_ratios)),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/quickstart.yaml")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--max-time", type=float, default=4.0, help="seconds of interleaved sampling per case"
    )
    args = parser.parse_args()
    backend = cupy_backend(0)  # refuses with one sentence where there is no GPU, as `launchbench run` does
    env = backend.environment()
    started = time.perf_counter()
    rows = [
        row for case in expand_scenario(args.scenario) for row in measure_case(backend, case, args.max_time)
    ]
    table = pd.DataFrame(rows)
    header = (
        f"fidelity on {describe_environment(env)}, "
        f"{env['time']}, {time.perf_counter() - started:.0f} s\n"
        f"ratio = median over rounds of (launchbench median / bare-loop median) in the same round of the interleaved "
        f"sampler ({SAMPLES_PER_ROUND} samples each); p25/p75 over rounds; pooled = ratio of medians over all samples; "
        "latency = one iteration on an idle stream, launch to completion (the bare loop waits with "
        "stream.synchronize()), latency_ratio its median per-round ratio (reported, no bound)\n"
    )
    write_report(table, header, args.out, "fidelity", digits=3)
    raise SystemExit(0 if table["within"].all() and table["outputs_match"].all() else 1)


if __name__ == "__main__":
    main()
