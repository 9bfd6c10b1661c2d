"""What sets a process's eager launch level: one bare CuPy process per trial, under controlled conditions.

Each trial starts a fresh Python process that imports CuPy only, launches 200 empty RawKernel launches
per batch on one stream and reports the median of 15 batches (µs per launch), with the CPU the thread ran on
and the process's hash seed. Conditions: a fixed PYTHONHASHSEED (the same seeds repeated, to see whether a
seed fixes the level), a random one, and address-space randomization off (`setarch -R`) where it works.

    python benchmarks/eager_levels_probe.py [--out results/fidelity-h200/probe/eager-levels.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import json, os, sys, time
import cupy, numpy as np
stream = cupy.cuda.Stream(non_blocking=True)
kernel = cupy.RawKernel('extern "C" __global__ void level_empty() {}', "level_empty")
def batch(n):
    stream.synchronize(); t0 = time.perf_counter()
    for _ in range(n):
        kernel((1,), (1,), (), stream=stream)
    stream.synchronize(); return (time.perf_counter() - t0) / n
batch(200)
times = [batch(200) for _ in range(15)]
stat = open("/proc/thread-self/stat").read()
print(json.dumps({"eager_us": float(np.median(times)) * 1e6, "spread_us": float(np.ptp(times)) * 1e6,
                  "cpu": int(stat.rsplit(")", 1)[1].split()[36]),
                  "hashseed": os.environ.get("PYTHONHASHSEED"), "id_kernel": id(kernel) % 4096}))
"""


def trial(condition: str, seed: str | None, no_aslr: bool) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("PYTHONHASHSEED", None)
    if seed is not None:
        env["PYTHONHASHSEED"] = seed
    command = [sys.executable, "-c", CHILD]
    if no_aslr:
        command = [shutil.which("setarch") or "setarch", os.uname().machine, "-R", *command]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    lines = done.stdout.strip().splitlines()
    row: dict[str, object] = json.loads(lines[-1]) if lines else {"error": done.stderr[-300:]}
    row.update(condition=condition, aslr=not no_aslr)
    return row


def plan() -> list[tuple[str, str | None, bool]]:
    fixed = [("fixed seed", str(seed), False) for _ in range(3) for seed in (0, 1, 2, 3)]
    random_seed = [("random seed", None, False) for _ in range(6)]
    no_aslr = [("random seed, ASLR off", None, True) for _ in range(6)]
    both = [("seed 0, ASLR off", "0", True) for _ in range(3)]
    return fixed + random_seed + no_aslr + both


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for condition, seed, no_aslr in plan():
        row = trial(condition, seed, no_aslr)
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
