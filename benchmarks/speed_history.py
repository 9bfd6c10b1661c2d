"""How long `launchbench history trend` and `launchbench history report` take over a history of 1,000 runs
(the targets: trend ≤ 0.3 s, report ≤ 20 s), each timed end to end as a process.

    python benchmarks/speed_history.py [--runs 1000] [--repeat 5] [--keep DIR] [--reuse DIR]
        [--out results/speed/history.json]

The runs are tests/history/synth.py's series (history_report_speed.build) built from the committed H200 quickstart runs' raw passes
(16 rows, 5 passes each, a day apart; host drift on host-bound rows; the graph rows 8% slower and the
driver changed from the middle run on), ingested into a SQLite file. Each command runs once uncounted
(its bytecode compiled into the work folder), then --repeat times as a process: interpreter start,
imports, queries, change points, the output. Each process gives its wall and CPU time, its peak resident
memory and the 1-minute load average as it started; the report's figures also hold the page's size
(``page_bytes``, the index.html the last process wrote). Writes --out (JSON: the figures, the machine, the
versions of Python and the libraries, the load average before and after) and prints a summary; the runs,
the database and the page live in a temporary directory unless --keep is given (--reuse DIR measures
again on what --keep left).
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
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _report import library_versions  # noqa: E402
from history_report_speed import build  # noqa: E402  (the series written and ingested)

from launchbench.results.environment import host_cpu  # noqa: E402

ROW = "quickstart/scale/length=100"
TARGETS_S = {"trend": 0.3, "report": 20.0}
LIBRARIES = ("launchbench", "sqlalchemy", "numpy", "scipy", "pandas", "pydantic", "jinja2", "click")


def commands(url: str, work: Path) -> dict[str, list[str]]:
    launchbench = [sys.executable, "-m", "launchbench", "history"]
    return {
        "trend": [*launchbench, "trend", ROW, "--mode", "graph", "--db", url, "--format", "csv"],
        "report": [*launchbench, "report", "--db", url, "-d", str(work / "report")],
    }


# Runs the command and reports its wall time and rusage as JSON. The measured process is started from
# this small interpreter rather than from the benchmark's own: Linux carries a process's peak resident set
# across exec, so a child forked from a parent that has built and ingested 1,000 runs would report the
# parent's size as its own peak.
_TIMER = """
import json, os, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
stderr = proc.stderr.read().decode()
_, status, usage = os.wait4(proc.pid, 0)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime,
                  "peak_rss_mib": usage.ru_maxrss / 1024, "code": os.waitstatus_to_exitcode(status),
                  "stderr": stderr}))
"""


def time_process(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall and CPU seconds and peak resident MiB of one process, and the load average as it started."""
    load = os.getloadavg()[0]
    timer = subprocess.run(
        [sys.executable, "-c", _TIMER, *command],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    measured = json.loads(timer.stdout)
    if measured["code"] != 0:
        raise SystemExit(f"{' '.join(command[3:5])} failed: {measured['stderr']}")
    return {
        "wall_s": measured["wall_s"],
        "cpu_s": measured["cpu_s"],
        "peak_rss_mib": measured["peak_rss_mib"],  # KiB on Linux, as MiB
        "load_1m": load,
    }


def summary(timings: list[dict[str, float]], target: float) -> dict[str, Any]:
    walls = [t["wall_s"] for t in timings]
    median = statistics.median(walls)
    return {
        "median_wall_s": median,
        "fastest_wall_s": min(walls),
        "slowest_wall_s": max(walls),
        "target_s": target,
        "met": median <= target,
        "processes": timings,
    }


def versions() -> dict[str, str]:
    return library_versions(LIBRARIES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5, help="timed processes per command (default 5)")
    parser.add_argument("--keep", type=Path, help="keep the run directories, database and page here")
    parser.add_argument("--reuse", type=Path, help="measure again on what --keep left here")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "speed" / "history.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    built: dict[str, float] = {}
    if args.reuse is not None:
        work, url = args.reuse, f"sqlite:///{args.reuse / 'history.sqlite'}"
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="lb-speed-history-"))
        t0 = time.perf_counter()
        url = build(work, args.runs)
        built["write_and_ingest_s"] = time.perf_counter() - t0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": str(work / "pycache")}
    results: dict[str, Any] = {}
    for name, command in commands(url, work).items():
        time_process(command, env)  # uncounted: compiles the bytecode
        timings = [time_process(command, env) for _ in range(args.repeat)]
        results[name] = summary(timings, TARGETS_S[name])
        if name == "report":  # the page the last process wrote
            results[name]["page_bytes"] = (work / "report" / "index.html").stat().st_size
        print(
            f"`launchbench history {name}` over {args.runs} runs: median {results[name]['median_wall_s']:.2f} s "
            f"wall (fastest {results[name]['fastest_wall_s']:.2f} s, target {TARGETS_S[name]:g} s), "
            f"{len(timings)} processes, load average {min(t['load_1m'] for t in timings):.2f}"
            f"–{max(t['load_1m'] for t in timings):.2f}"
        )
    document = {
        "benchmark": "benchmarks/speed_history.py",
        "runs": args.runs,
        "rows_per_run": 16,
        "built": built,
        "commands": {name: " ".join(c[2:]) for name, c in commands("URL", Path("WORK")).items()},
        "results": results,
        "machine": {
            "cpu": host_cpu(),
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": list(load_before),
            "load_average_after": list(os.getloadavg()),
        },
        "versions": versions(),
        "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
