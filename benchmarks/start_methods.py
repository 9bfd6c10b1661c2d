"""How a process's start method changes what it costs to start and what it measures (imports nothing of
launchbench in the measuring children).

    python benchmarks/start_methods.py [--processes 8] [--out results/speed/start-methods.json]

Alternates children started with multiprocessing's ``spawn`` (a fresh interpreter, as launchbench's
workers start) and ``forkserver`` (forked from one server process that imported NumPy and CuPy, with no
CUDA call, beforehand). Each child records when it began running (so the start is measurable from the
parent's side), imports CuPy, creates its CUDA context, then measures, on a stream of its own after a
warm-up: an empty kernel launched 1,000 times (wall µs per launch, the median of 9 batches), and a CUDA
Graph of 1,000 empty-kernel nodes replayed (wall µs per node, the median of 9 batches of 5 replays).
Whether forked children sit at host levels as independently as fresh interpreters do is what the
per-process values show; the start times say what a fork would save.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from pathlib import Path

SOURCE = r'extern "C" __global__ void lb_empty() {}'
LAUNCHES = 1000
BATCHES = 9
REPLAYS = 5


def _per_launch(run, count: int) -> float:
    """Median wall seconds per unit of ``run()`` (which does ``count`` units), over BATCHES batches."""
    import cupy

    times = []
    for _ in range(BATCHES):
        cupy.cuda.get_current_stream().synchronize()
        start = time.perf_counter()
        run()
        cupy.cuda.get_current_stream().synchronize()
        times.append((time.perf_counter() - start) / count)
    return statistics.median(times)


def child(queue, spawned_at: float) -> None:
    began = time.time()
    start = time.perf_counter()
    import cupy

    imported = time.perf_counter()
    kernel = cupy.RawKernel(SOURCE, "lb_empty")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        kernel((1,), (1,), ())
        stream.synchronize()
        context = time.perf_counter()

        def eager() -> None:
            for _ in range(LAUNCHES):
                kernel((1,), (1,), ())

        eager()
        eager_s = _per_launch(eager, LAUNCHES)
        stream.begin_capture()
        eager()
        graph = stream.end_capture()
        graph.upload(stream)
        graph.launch(stream)

        def replay() -> None:
            for _ in range(REPLAYS):
                graph.launch(stream)

        graph_s = _per_launch(replay, LAUNCHES * REPLAYS)
    queue.put(
        {
            "pid": os.getpid(),
            "began_after_s": began - spawned_at,
            "cupy_import_s": imported - start,
            "context_s": context - imported,
            "eager_us": eager_s * 1e6,
            "graph_node_us": graph_s * 1e6,
        }
    )


def one(method: str) -> dict:
    ctx = multiprocessing.get_context(method)
    queue = ctx.Queue()
    spawned_at = time.time()
    process = ctx.Process(target=child, args=(queue, spawned_at))
    process.start()
    result = queue.get(timeout=120)
    process.join(30)
    return {"method": method, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    multiprocessing.set_forkserver_preload(["numpy", "cupy"])
    warm = one("forkserver")  # starts the server (its own start is not a child's)
    rows = []
    for _ in range(args.processes):
        for method in ("spawn", "forkserver"):
            rows.append(one(method))
    summary = {}
    for method in ("spawn", "forkserver"):
        mine = [r for r in rows if r["method"] == method]
        summary[method] = {
            key: {
                "median": statistics.median(r[key] for r in mine),
                "min": min(r[key] for r in mine),
                "max": max(r[key] for r in mine),
            }
            for key in ("began_after_s", "cupy_import_s", "context_s", "eager_us", "graph_node_us")
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "benchmark": "start_methods",
        "python": sys.version.split()[0],
        "machine": platform.platform(),
        "load_average": os.getloadavg(),
        "server_warm_child": warm,
        "rows": rows,
        "summary": summary,
    }
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    for method, values in summary.items():
        print(method, {k: round(v["median"], 4) for k, v in values.items()})


if __name__ == "__main__":
    main()
