"""How long the CPU test suite takes: the README's pytest command (`python -m pytest -q -n auto --dist
loadfile`, as .ci/run runs it), run --repeat times as a process (the target: ≤ 60 s of pytest on the
2-core CI machine).

    python benchmarks/speed_tests.py [--repeat 3] [--out results/speed/tests.json] [-- PYTEST ARGS]

Each run gives its wall time, its CPU time (user + system of pytest and every process it waited for:
the xdist workers and the commands they start), its peak resident memory, pytest's summary line and the
1-minute load average as it started and ended; and, through the plugin benchmarks/_test_cpu.py, the CPU
and wall seconds of each test and of each worker's collection: their sums, the totals per test file and
the slowest tests (by CPU). A busy machine lengthens the wall time and leaves the CPU
time nearly as it is: compare CPU times when the load differs. Writes --out (JSON: the runs, the
machine, the versions of Python and the test libraries, the load average before and after) and prints a
summary. Arguments after `--` replace the command's own after `pytest` (e.g. `-- -q -n 2 --dist
worksteal`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _report import library_versions  # noqa: E402
from _test_cpu import VARIABLE as CPU_DIR_VARIABLE  # noqa: E402

from launchbench.results.environment import host_cpu  # noqa: E402

PYTEST_ARGS = ["-q", "-n", "auto", "--dist", "loadfile"]
TARGET_S = 60.0
LIBRARIES = ("launchbench", "pytest", "pytest-xdist", "hypothesis", "click", "pandas", "matplotlib")


def per_test(folder: Path, top: int = 20) -> dict[str, Any]:
    """The plugin's files in ``folder`` summed: collection, tests, per file and the slowest tests."""
    workers = [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]
    tests = [t for w in workers for t in w["tests"]]
    files_cpu: Counter[str] = Counter()
    files_wall: Counter[str] = Counter()
    for test in tests:
        files_cpu[test["test"].split("::")[0]] += test["cpu_s"]
        files_wall[test["test"].split("::")[0]] += test["wall_s"]
    slowest = sorted(tests, key=lambda t: t["cpu_s"], reverse=True)[:top]
    return {
        "workers": len(workers),
        "collection_cpu_s": {w["worker"]: round(w["collection_cpu_s"], 2) for w in workers},
        "tests_cpu_s": sum(t["cpu_s"] for t in tests),
        "tests_wall_s": sum(t["wall_s"] for t in tests),
        "files": [
            {"file": name, "cpu_s": round(cpu, 2), "wall_s": round(files_wall[name], 2)}
            for name, cpu in files_cpu.most_common(top)
        ],
        "slowest_tests": [
            {k: round(v, 2) if isinstance(v, float) else v for k, v in t.items()} for t in slowest
        ],
    }


def time_suite(args: list[str]) -> dict[str, Any]:
    """Wall and CPU seconds, peak resident MiB, the summary line and the per-test CPU of one run of pytest."""
    load = os.getloadavg()[0]
    folder = Path(tempfile.mkdtemp(prefix="launchbench-test-cpu-"))
    paths = [str(REPO / "benchmarks"), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, CPU_DIR_VARIABLE: str(folder), "PYTHONPATH": os.pathsep.join(paths)}
    t0 = time.perf_counter()
    command = [sys.executable, "-m", "pytest", *args, "-p", "_test_cpu"]
    proc = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    lines = [line for line in output.splitlines() if line.strip()]
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "user_s": usage.ru_utime,
        "system_s": usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,  # KiB on Linux: the largest single process
        "exit_code": os.waitstatus_to_exitcode(status),
        "summary": lines[-1] if lines else "",
        "load_1m_start": load,
        "load_1m_end": os.getloadavg()[0],
        "per_test": per_test(folder),
    }


def versions() -> dict[str, str]:
    return library_versions(LIBRARIES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the suite (default 3)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "speed" / "tests.json")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's arguments instead of the README's")
    args = parser.parse_args()
    pytest_args = args.pytest_args or PYTEST_ARGS
    load_before = os.getloadavg()
    runs = []
    for index in range(args.repeat):
        runs.append(time_suite(pytest_args))
        run = runs[-1]
        print(
            f"run {index + 1}: {run['wall_s']:.1f} s wall, {run['cpu_s']:.1f} s CPU, load average "
            f"{run['load_1m_start']:.1f}–{run['load_1m_end']:.1f}: {run['summary']}; the tests' own "
            f"{run['per_test']['tests_cpu_s']:.1f} s CPU, {run['per_test']['tests_wall_s']:.1f} s wall"
        )
    walls = [r["wall_s"] for r in runs]
    document = {
        "benchmark": "benchmarks/speed_tests.py",
        "command": " ".join(["python -m pytest", *pytest_args]),
        "target_s": TARGET_S,
        "median_wall_s": statistics.median(walls),
        "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "met": statistics.median(walls) <= TARGET_S,
        "runs": runs,
        "machine": {
            "cpu": host_cpu(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": list(load_before),
            "load_average_after": list(os.getloadavg()),
        },
        "versions": versions(),
        # set, Python writes no bytecode: every process compiles what has none, pytest rewrites every test module
        "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(
        f"median {document['median_wall_s']:.1f} s wall (target {TARGET_S:g} s), "
        f"{document['median_cpu_s']:.1f} s CPU over {len(runs)} runs"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
