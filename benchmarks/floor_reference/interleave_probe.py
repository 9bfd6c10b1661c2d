"""Does interleaving move a one-node graph launch? In one process importing nothing of launchbench: a
CuPy one-node graph of an empty kernel timed as bare_layers.py times it (batches lasting --sample-time),
in stretches of 5 batches, either back to back ("alone") or alternating with 5 batches of another
workload (eager launches of the same kernel, or a 100-node graph replay), as launchbench's sampler
alternates its workloads; printed: one JSON line per pattern and repeat, the graph's median µs per launch.

    python benchmarks/floor_reference/interleave_probe.py [--repeats 2] [--stretches 6]
"""

from __future__ import annotations

import argparse
import json
import statistics

import cupy
from bare_layers import BLOCK, calibrated, capture, source, timed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--stretches", type=int, default=6)
    parser.add_argument("--sample-time", type=float, default=0.005)
    opts = parser.parse_args()
    stream = cupy.cuda.Stream(non_blocking=True)
    kernel = cupy.RawModule(code=source([0])).get_function("lb_floor_0")
    eager = (kernel, ((1,), (1,), ()))
    one = capture(stream, *eager, 1)
    hundred = capture(stream, *eager, 100)
    with stream:
        workloads = {
            "graph": (one.launch, (stream,), 1),
            "eager": (*eager, 1),
            "gpu100": (hundred.launch, (stream,), 100),
        }
        calls = {
            name: calibrated(stream, 1, max(1, BLOCK // per), (fn, args), opts.sample_time)
            for name, (fn, args, per) in workloads.items()
        }
        for repeat in range(opts.repeats):
            for pattern in ("alone", "eager", "gpu100"):
                values = []
                for _ in range(opts.stretches):
                    for name in ("graph",) if pattern == "alone" else ("graph", pattern):
                        fn, args, per = workloads[name]
                        got = [
                            timed(stream, calls[name], max(1, BLOCK // per), fn, args) / per for _ in range(5)
                        ]
                        if name == "graph":
                            values += got
                print(
                    json.dumps(
                        {
                            "repeat": repeat,
                            "pattern": pattern,
                            "graph_us": round(1e6 * statistics.median(values), 4),
                            "first_of_stretch_us": round(1e6 * statistics.median(values[::5]), 4),
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
