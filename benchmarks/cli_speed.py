"""How long `launchbench --help` and `launchbench --version` take, start of the process to its exit.

    python benchmarks/cli_speed.py [--repeat N] [--limit S]

Runs each command N times (default 20) in a fresh interpreter, as a user's shell does, and prints the
median wall time, the slowest, and the median CPU time (user + system) of the process. The same for
`python -c pass` gives the interpreter's own start-up for reference. Exits 1 when a median wall time
exceeds --limit (default 0.3 s). On a machine busy with other work the wall times grow and the CPU
times do not. Run it from the repository root, with the interpreter of the project's virtualenv.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "launchbench --help": ["-m", "launchbench", "--help"],
    "launchbench --version": ["-m", "launchbench", "--version"],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_once(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of the interpreter with ``args``."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--limit", type=float, default=0.3)
    options = parser.parse_args()
    time_once(COMMANDS["launchbench --version"])  # the first run warms the file cache; it is not counted
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before the runs")
    slow = False
    for name, args in COMMANDS.items():
        runs = [time_once(args) for _ in range(options.repeat)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        if name.startswith("launchbench"):
            slow = slow or wall > options.limit
        print(
            f"{name:<22} wall median {wall:.3f} s, slowest {max(w for w, _ in runs):.3f} s; "
            f"CPU median {cpu:.3f} s ({options.repeat} runs)"
        )
    print(f"limit {options.limit} s: {'exceeded' if slow else 'met'}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
