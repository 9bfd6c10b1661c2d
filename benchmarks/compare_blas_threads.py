"""compare of two 1,000-case distinct runs, OpenBLAS at its default threads against one, alternating.

    python benchmarks/compare_blas_threads.py OUT.json

Builds the runs as speed_compare.py --distinct does (written by launchbench's own writer, so with their
host-level splits kept), then runs `python -m launchbench compare` six times each way in fresh
processes, alternating, and writes each run's wall and CPU seconds (the child's user + system, every
thread) and the load average. launchbench's CLI now sets OPENBLAS_NUM_THREADS=1 itself where it is
unset, so "default" (the variable left out of the child's environment) reads as one thread on this
tree; it measured OpenBLAS's default on the tree before (results/speed/compare-openblas-h200.json).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from speed_compare import synthetic_runs  # noqa: E402

SETTINGS = (("default", None), ("openblas-1", "1"))
ROUNDS = 6


def one_compare(a: Path, b: Path, output: Path, threads: str | None) -> tuple[float, float]:
    """Wall and CPU seconds of one `launchbench compare A B` in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = threads
    command = [
        sys.executable,
        "-m",
        "launchbench",
        "compare",
        str(a),
        str(b),
        "--format",
        "csv",
        "-o",
        str(output),
    ]
    began, before = time.perf_counter(), os.times()
    subprocess.run(command, env=env, check=True, capture_output=True)
    after = os.times()
    cpu = after.children_user - before.children_user + after.children_system - before.children_system
    return time.perf_counter() - began, cpu


def main() -> None:
    out = Path(sys.argv[1])
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        a, b = synthetic_runs(Path(scratch), 1000, True)
        for round_ in range(ROUNDS):
            for label, threads in SETTINGS:
                wall, cpu = one_compare(a, b, Path(scratch) / "c.csv", threads)
                load = os.getloadavg()[0]
                rows.append(
                    {
                        "round": round_,
                        "setting": label,
                        "wall_s": round(wall, 3),
                        "cpu_s": round(cpu, 3),
                        "load_1m": round(load, 2),
                    }
                )
    out.write_text(json.dumps({"cores": os.cpu_count(), "runs": rows}, indent=1) + "\n")
    for label, _ in SETTINGS:
        walls = sorted(r["wall_s"] for r in rows if r["setting"] == label)
        cpus = [r["cpu_s"] for r in rows if r["setting"] == label]
        print(label, "wall", walls, "cpu median", statistics.median(cpus))


if __name__ == "__main__":
    main()
