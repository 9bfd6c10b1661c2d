"""Multi-GPU: an NCCL all-reduce across every visible GPU, launched eagerly and replayed from one CUDA
Graph per device (each captured on its own device's stream, the per-device calls inside
nccl.groupStart()/groupEnd()). Needs two or more GPUs; says so and exits 0 with one.

Per iteration: on every device a scale kernel on the send buffer, then `steps` all-reduces (sum).
Reports wall time per iteration (median of samples of many iterations), checks the graph's result
against the eager one and both against the sum computed on the host.

    python benchmarks/multigpu_allreduce.py --out results/multigpu
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cupy
import numpy as np
import pandas as pd
from _report import write_report
from cupy.cuda import nccl

from launchbench.backend.gpu_probe import collect_environment
from launchbench.results.environment import describe_environment

SIZES = [256, 65_536, 4_194_304]  # float32 elements per device: 1 KiB, 256 KiB, 16 MiB
STEPS = 8  # all-reduces per iteration
SAMPLES = 15


class AllReduce:
    def __init__(self, devices: list[int], count: int):
        self.devices = devices
        self.count = count
        self.comms = nccl.NcclCommunicator.initAll(devices)
        self.streams, self.send, self.recv, self.initial = [], [], [], []
        rng = np.random.default_rng(0)
        for dev in devices:
            with cupy.cuda.Device(dev):
                self.streams.append(cupy.cuda.Stream(non_blocking=True))
                host = rng.uniform(0.5, 1.5, count).astype(np.float32)
                self.initial.append(host)
                self.send.append(cupy.asarray(host))
                self.recv.append(cupy.zeros(count, dtype=cupy.float32))
        self.graphs: list[cupy.cuda.Graph] = []

    def reset(self) -> None:
        for dev, send, host in zip(self.devices, self.send, self.initial):
            with cupy.cuda.Device(dev):
                send.set(host)
                cupy.cuda.Device(dev).synchronize()

    def iteration(self) -> None:
        for dev, stream, send in zip(self.devices, self.streams, self.send):
            with cupy.cuda.Device(dev), stream:
                cupy.multiply(send, np.float32(1.0), out=send)
        for _ in range(STEPS):
            nccl.groupStart()
            for dev, comm, stream, send, recv in zip(
                self.devices, self.comms, self.streams, self.send, self.recv
            ):
                with cupy.cuda.Device(dev):
                    comm.allReduce(
                        send.data.ptr, recv.data.ptr, self.count, nccl.NCCL_FLOAT32, nccl.NCCL_SUM, stream.ptr
                    )
            nccl.groupEnd()

    def capture(self) -> None:
        for dev, stream in zip(self.devices, self.streams):
            with cupy.cuda.Device(dev):
                stream.begin_capture()
        self.iteration()
        self.graphs = []
        for dev, stream in zip(self.devices, self.streams):
            with cupy.cuda.Device(dev):
                self.graphs.append(stream.end_capture())

    def replay(self) -> None:
        for dev, graph, stream in zip(self.devices, self.graphs, self.streams):
            with cupy.cuda.Device(dev):
                graph.launch(stream)

    def sync(self) -> None:
        for dev, stream in zip(self.devices, self.streams):
            with cupy.cuda.Device(dev):
                stream.synchronize()

    def result(self) -> list[np.ndarray]:
        self.sync()
        out = []
        for dev, recv in zip(self.devices, self.recv):
            with cupy.cuda.Device(dev):
                out.append(cupy.asnumpy(recv))
        return out

    def close(self) -> None:
        self.sync()
        self.graphs = []  # graphs first, then communicators: a process was seen to hang at exit otherwise
        for comm in self.comms:
            comm.destroy()


def time_per_iteration(run, sync, iters: int) -> float:
    sync()
    start = time.perf_counter()
    for _ in range(iters):
        run()
    sync()
    return (time.perf_counter() - start) / iters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    n = cupy.cuda.runtime.getDeviceCount()
    if n < 2:
        print(f"multi-GPU all-reduce needs 2 or more GPUs; this machine has {n}: skipped")
        raise SystemExit(0)
    devices = list(range(n))
    rows = []
    for count in SIZES:
        bench = AllReduce(devices, count)
        try:
            expected = np.sum(bench.initial, axis=0, dtype=np.float64)
            bench.reset()
            bench.iteration()
            eager_out = bench.result()
            bench.reset()
            bench.capture()
            bench.replay()
            graph_out = bench.result()
            exact = all(np.array_equal(e, g) for e, g in zip(eager_out, graph_out))
            correct = all(np.allclose(g, expected, rtol=1e-5) for g in graph_out)
            iters = max(1, min(200, int(2e5 / count)))
            for _ in range(3):
                time_per_iteration(bench.iteration, bench.sync, iters)
                time_per_iteration(bench.replay, bench.sync, iters)
            eager, graph = [], []
            for _ in range(SAMPLES):  # interleaved
                eager.append(time_per_iteration(bench.iteration, bench.sync, iters))
                graph.append(time_per_iteration(bench.replay, bench.sync, iters))
            e, g = float(np.median(eager)) * 1e6, float(np.median(graph)) * 1e6
            rows.append(
                {
                    "gpus": n,
                    "floats_per_gpu": count,
                    "allreduces_per_iter": STEPS,
                    "eager_us_per_iter": e,
                    "eager_us_p5": float(np.percentile(eager, 5)) * 1e6,
                    "eager_us_p95": float(np.percentile(eager, 95)) * 1e6,
                    "graph_us_per_iter": g,
                    "graph_us_p5": float(np.percentile(graph, 5)) * 1e6,
                    "graph_us_p95": float(np.percentile(graph, 95)) * 1e6,
                    "speedup": e / g,
                    "graph_equals_eager": exact,
                    "sum_correct": correct,
                }
            )
        finally:
            bench.close()
    table = pd.DataFrame(rows)
    env = collect_environment(0)
    header = f"NCCL all-reduce on {n}× {describe_environment(env, f'NCCL {nccl.get_version()}')}, {env['time']}; {STEPS} all-reduces + 1 kernel per device per iteration; median of {SAMPLES} samples\n"
    write_report(table, header, args.out, "multigpu_allreduce", digits=2)
    raise SystemExit(0 if (table["graph_equals_eager"] & table["sum_correct"]).all() else 1)


if __name__ == "__main__":
    main()
