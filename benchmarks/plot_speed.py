"""How long `launchbench plot` takes on a run of many cases, and its peak memory (the targets: 1,000
cases in < 10 s and < 300 MB).

Builds a run of N cases from the committed H200 quickstart run (its 8 cases repeated under new case
ids, as benchmarks/compare_speed.py does: raw samples and passes as measured, so each of its two
chains has N / 2 cases over its four lengths), writes it as a run directory, and times the whole
command in a fresh process, the way a person runs it (interpreter start, reading results.json, the
table, every figure at the default 200 dpi):

    python benchmarks/plot_speed.py [--cases 1000] [--repeat 3] > results/speed/plot_speed.txt

The peak memory is the child's maximum resident set size (resource.getrusage of the children, which
Linux reports in KB). The first line gives the machine, its cores and the load average before the
runs, the last the load average after them: the wall time is meaningful on an idle machine only.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare_speed import scaled

from launchbench.results.environment import host_cpu
from launchbench.results.store import load_run, write_run

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "results" / "quickstart-h200"


def time_plot(run_dir: Path, out_dir: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS MB) of one `launchbench plot` in a fresh process."""
    command = [sys.executable, "-m", "launchbench", "plot", str(run_dir), "-d", str(out_dir), "-q"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, after.ru_maxrss / 1024  # the largest child so far: every run plots the same run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{host_cpu()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} before the runs"
    )
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        run_dir.mkdir()
        write_run(run_dir, scaled(load_run(SOURCE), args.cases))
        size = (run_dir / "results.json").stat().st_size / 1e6
        results = [time_plot(run_dir, Path(tmp) / f"plots-{i}") for i in range(args.repeat)]
        figures = sorted(p.name for p in (Path(tmp) / "plots-0").iterdir())
    walls, cpus, peak = [r[0] for r in results], [r[1] for r in results], results[-1][2]
    print(
        f"launchbench plot, one run of {args.cases} cases (8 H200 quickstart cases repeated; results.json "
        f"{size:.1f} MB), {len(figures)} figures at 200 dpi, best of {args.repeat}: wall {min(walls):.2f} s, "
        f"CPU {min(cpus):.2f} s (wall: {', '.join(f'{t:.2f}' for t in walls)} s), peak RSS {peak:.0f} MB"
    )
    print(f"figures: {', '.join(figures)}")
    print(f"load average {os.getloadavg()[0]:.1f} after the runs")


if __name__ == "__main__":
    main()
