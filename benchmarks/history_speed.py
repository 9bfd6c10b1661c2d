"""How fast the history is: ingest N synthetic copies of the committed H200 quickstart run, then ask for
one row's trend (the library call, and the `launchbench history trend` command as a process).

    python benchmarks/history_speed.py [--runs 1000] [--db URL] [--keep DIR] [--reuse DIR] [--repeat 5]

The copies differ only in their start time (so each has its own content hash); each is a full run:
16 rows, 5 passes, 4 raw series. The trend command runs --repeat times as a process (each with the
load average as it started; bytecode cached, after one uncounted run), then once under ``-X importtime`` for what its imports cost, package by
package. Prints the figures; writes nothing else (the run directories and the SQLite file live in a
temporary directory unless --keep is given; --reuse DIR measures the trend again on what --keep left).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from launchbench.history.db import HistoryDB  # noqa: E402
from launchbench.history.ingest import ingest_run_dir  # noqa: E402
from launchbench.history.trend import trend  # noqa: E402

SOURCE = REPO / "results" / "quickstart-h200" / "results.json"
ROW = ("quickstart", "scale/length=100", "graph")


def make_copies(out: Path, runs: int) -> list[Path]:
    data = json.loads(SOURCE.read_text())
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    dirs = []
    for i in range(runs):
        data["started"] = (start + timedelta(hours=i)).isoformat()
        path = out / f"run-{i:04d}"
        path.mkdir(parents=True)
        (path / "results.json").write_text(json.dumps(data))
        dirs.append(path)
    return dirs


def _command(url: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "launchbench",
        "history",
        "trend",
        f"{ROW[0]}/{ROW[1]}",
        "--mode",
        ROW[2],
        "--db",
        url,
        "--format",
        "csv",
    ]


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO)}


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_process(args: list[str], expect_lines: int | None = None) -> tuple[float, float, float]:
    """Wall and CPU seconds of one process, and the 1-minute load average as it started."""
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), _cpu_of_children()
    proc = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=ENV, check=True)
    wall, cpu = time.perf_counter() - t0, _cpu_of_children() - c0
    if expect_lines is not None:
        assert len(proc.stdout.strip().splitlines()) == expect_lines
    return wall, cpu, load


def import_breakdown(url: str) -> list[tuple[str, float]]:
    """Seconds the trend process spends importing each top-level package (``-X importtime``, self times
    summed per package), largest first."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *_command(url)[1:]],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=ENV,
        check=True,
    )
    totals: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = (part.strip() for part in line[len("import time:") :].split("|"))
        package = name.split(".")[0]
        totals[package] = totals.get(package, 0.0) + int(self_us) / 1e6
    return sorted(totals.items(), key=lambda item: -item[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--db", help="database URL (default: a SQLite file in the working directory)")
    parser.add_argument("--keep", type=Path, help="keep the run directories and database here")
    parser.add_argument(
        "--reuse", type=Path, help="measure only the trend on the database a --keep run left in this folder"
    )
    parser.add_argument("--repeat", type=int, default=5, help="times the trend process is run (default 5)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.reuse is not None:
        url = args.db or f"sqlite:///{args.reuse / 'history.sqlite'}"
        work = args.reuse
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="lb-history-speed-"))
        url = args.db or f"sqlite:///{work / 'history.sqlite'}"
        dirs = make_copies(work / "runs", args.runs)
    with HistoryDB(url) as db:
        if args.reuse is None:
            t0, c0 = time.perf_counter(), time.process_time()
            for d in dirs:
                ingest_run_dir(db, d)
            ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
            print(
                f"ingest {args.runs} runs: {ingest_s:.1f} s wall, {ingest_cpu:.1f} s CPU of this process "
                f"({1000 * ingest_s / args.runs:.1f} ms wall per run)"
            )
        t0, c0 = time.perf_counter(), time.process_time()
        points = trend(db, ROW, "wall_us_per_launch")
        trend_s, trend_cpu = time.perf_counter() - t0, time.process_time() - c0
    runs = len(points)
    # bytecode cached as an installed launchbench has it (in the work folder, not the source tree): the
    # first process compiles it and is not counted
    ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    time_process(_command(url), runs + 1)
    print(
        f"trend of one row over {runs} runs: library {1000 * trend_s:.0f} ms wall, {1000 * trend_cpu:.0f} ms CPU"
    )
    timings = [time_process(_command(url), runs + 1) for _ in range(args.repeat)]
    for wall, cpu, load in timings:
        print(
            f"`launchbench history trend` as a process: {wall:.2f} s wall, {cpu:.2f} s CPU (load average {load:.2f})"
        )
    walls = sorted(t[0] for t in timings)
    print(
        f"`launchbench history trend` over {len(timings)} processes: median {walls[len(walls) // 2]:.2f} s wall, "
        f"fastest {walls[0]:.2f} s; load average {min(t[2] for t in timings):.2f}–{max(t[2] for t in timings):.2f}"
    )
    wall, cpu, load = time_process([sys.executable, "-c", "import launchbench.cli"])
    print(f"importing launchbench.cli alone: {wall:.2f} s wall, {cpu:.2f} s CPU")
    wall, cpu, load = time_process([sys.executable, "-c", "pass"])
    print(f"python starting alone: {wall:.2f} s wall, {cpu:.2f} s CPU")
    breakdown = import_breakdown(url)
    total = sum(seconds for _, seconds in breakdown)
    top = ", ".join(f"{name} {seconds:.2f}" for name, seconds in breakdown[:8])
    print(f"imports of the trend process (-X importtime, s): {total:.2f} in all; {top}")
    if url.startswith("sqlite:///"):
        print(f"SQLite file: {Path(url[len('sqlite:///') :]).stat().st_size / 2**20:.0f} MiB")
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
