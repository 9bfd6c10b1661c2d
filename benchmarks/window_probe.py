"""How the way a loop keeps its launch queue bounded moves the one-launch rows: launchbench's window
(an event recorded after every block of 256 launches, the thread waiting on the block before, so the
queue never drains) against the bare loop's (a stream.synchronize() after every 256 launches, so the
queue drains every time), in plain CuPy, each process importing nothing of launchbench.

For a one-node graph of an empty kernel (replayed) and one eager empty kernel, every variant is timed
in the same process, the variants taking turns ROUNDS times; PROCESSES fresh processes one after another.
Each timing: a warm-up batch, then 9 batches of at least 5 ms (between synchronizes, time.perf_counter),
µs per launch; the median of the 9, and the median of the rounds per variant and process.

    python benchmarks/window_probe.py [--processes 3] [--rounds 5] [--out FILE.json]

Variants: ``sync256`` (benchmarks/bare_loop.py's), ``window256`` (launchbench.backend.window's: events
with blocking sync, at most two blocks queued), ``window256_spin`` (the same with spinning events),
``sync1024``, ``sync4096``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, statistics, sys, time
import cupy
rounds = int(sys.argv[1])
stream = cupy.cuda.Stream(non_blocking=True)
kernel = cupy.RawKernel('extern "C" __global__ void probe_empty() {}', "probe_empty")
with stream:
    kernel((1,), (1,), (), stream=stream)
    stream.synchronize()
    stream.begin_capture()
    kernel((1,), (1,), (), stream=stream)
    graph = stream.end_capture()
    graph.upload(stream)
    graph.launch(stream)
    stream.synchronize()
launches = {"graph": lambda: graph.launch(stream), "eager": lambda: kernel((1,), (1,), (), stream=stream)}

def synced(every):
    def run(launch, iters):
        for i in range(iters):
            launch()
            if (i + 1) % every == 0:
                stream.synchronize()
    return run

def windowed(block, blocking):
    events = [cupy.cuda.Event(block=blocking, disable_timing=True) for _ in range(3)]
    def run(launch, iters):
        outstanding, k = [], 0
        for i in range(iters):
            launch()
            if (i + 1) % block == 0:
                e = events[k % 3]; k += 1
                e.record(stream); outstanding.append(e)
                if len(outstanding) > 1:
                    outstanding.pop(0).synchronize()
    return run

variants = {"sync256": synced(256), "window256": windowed(256, True), "window256_spin": windowed(256, False),
            "sync1024": synced(1024), "sync4096": synced(4096)}

def batch(run, launch, iters):
    stream.synchronize()
    t = time.perf_counter()
    run(launch, iters)
    stream.synchronize()
    return time.perf_counter() - t

def timing(run, launch):
    iters = 256
    while batch(run, launch, iters) < 0.005:
        iters *= 2
    return statistics.median(batch(run, launch, iters) / iters for _ in range(9)) * 1e6

out = {mode: {name: [] for name in variants} for mode in launches}
with stream:
    for _ in range(rounds):
        for mode, launch in launches.items():
            for name, run in variants.items():
                out[mode][name].append(timing(run, launch))
cpu = int(open("/proc/thread-self/stat").read().rsplit(")", 1)[1].split()[36])
print(json.dumps({"us_per_launch": out, "cpu": cpu}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    processes = []
    for _ in range(args.processes):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(args.rounds)], capture_output=True, text=True, check=True
        )
        processes.append(json.loads(done.stdout))
    for index, proc in enumerate(processes):
        for mode, variants in proc["us_per_launch"].items():
            medians = "  ".join(f"{name} {statistics.median(v):.3f}" for name, v in variants.items())
            print(f"process {index} (CPU {proc['cpu']}) {mode}: {medians} µs per launch")
    if args.out:
        args.out.write_text(json.dumps({"processes": processes, "rounds": args.rounds}, indent=1) + "\n")


if __name__ == "__main__":
    main()
