"""Does what else a process holds move a one-node graph launch? In one process importing nothing of
launchbench: a CuPy one-node graph of an empty kernel and an eager launch of it, timed as bare_layers.py
times them, while the process holds nothing else ("bare") and while it holds what a floor process holds
besides (12 more one-node graphs of kernels from 12 more modules and a 100-node graph, each launched once;
"extras"), alternating within the process so the host's state between processes cancels. Printed: one
JSON line per stretch.

    python benchmarks/floor_reference/extras_probe.py [--repeats 4]
"""

from __future__ import annotations

import argparse
import json
import statistics

import cupy
from bare_layers import BLOCK, calibrated, capture, source, timed


def extras(stream: cupy.cuda.Stream) -> list[object]:
    held: list[object] = []
    for i in range(12):
        kernel = cupy.RawModule(code=source([i % 5]).replace("lb_floor_", f"lb_extra{i}_")).get_function(
            f"lb_extra{i}_{i % 5}"
        )
        argv = (cupy.zeros(1, dtype=cupy.float32),) * (i % 5)
        graph = capture(stream, kernel, ((1,), (1,), argv), 1)
        graph.launch(stream)
        held += [kernel, argv, graph]
    big = capture(stream, held[0], ((1,), (1,), ()), 100)
    big.launch(stream)
    stream.synchronize()
    return [*held, big]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--sample-time", type=float, default=0.005)
    opts = parser.parse_args()
    stream = cupy.cuda.Stream(non_blocking=True)
    kernel = cupy.RawModule(code=source([0])).get_function("lb_floor_0")
    graph = capture(stream, kernel, ((1,), (1,), ()), 1)
    loops = {"graph": (graph.launch, (stream,)), "eager": (kernel, ((1,), (1,), ()))}
    with stream:
        calls = {name: calibrated(stream, 1, BLOCK, call, opts.sample_time) for name, call in loops.items()}
        held: list[object] = []
        for repeat in range(opts.repeats):
            for state in ("bare", "extras") if repeat % 2 == 0 else ("extras", "bare"):
                if state == "extras" and not held:
                    held = extras(stream)
                if state == "bare":
                    held = []
                    stream.synchronize()
                for name, (fn, args) in loops.items():
                    for _ in range(2):
                        timed(stream, calls[name], BLOCK, fn, args)  # the first batches after a change
                    us = [1e6 * timed(stream, calls[name], BLOCK, fn, args) for _ in range(9)]
                    line = {
                        "repeat": repeat,
                        "state": state,
                        "mode": name,
                        "us": round(statistics.median(us), 4),
                    }
                    print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
