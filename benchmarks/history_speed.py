"""How fast the history is: ingest N synthetic copies of the committed H200 quickstart run, then ask for
one row's trend (the library call, and the `launchbench history trend` command as a process).

    python benchmarks/history_speed.py [--runs 1000] [--db URL] [--keep DIR]

The copies differ only in their start time (so each has its own content hash); each is a full run:
16 rows, 5 passes, 4 raw series. Prints the figures and the machine's load; writes nothing else (the run
directories and the SQLite file live in a temporary directory unless --keep is given).
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
from launchbench.history.query import trend  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--db", help="database URL (default: a SQLite file in the working directory)")
    parser.add_argument("--keep", type=Path, help="keep the run directories and database here")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    work = args.keep or Path(tempfile.mkdtemp(prefix="lb-history-speed-"))
    url = args.db or f"sqlite:///{work / 'history.sqlite'}"
    dirs = make_copies(work / "runs", args.runs)
    with HistoryDB(url) as db:
        t0, c0 = time.perf_counter(), time.process_time()
        for d in dirs:
            ingest_run_dir(db, d)
        ingest_s, ingest_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        points = trend(db, ROW, "wall_us_per_launch")
        trend_s, trend_cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(points) == args.runs
    t0, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [
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
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    command_s = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    command_cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "import launchbench.cli"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    import_s = time.perf_counter() - t0
    import_cpu = sum(
        getattr(resource.getrusage(resource.RUSAGE_CHILDREN), f) for f in ("ru_utime", "ru_stime")
    ) - (after.ru_utime + after.ru_stime)
    assert len(proc.stdout.strip().splitlines()) == args.runs + 1
    size = (work / "history.sqlite").stat().st_size if not args.db else None
    print(
        f"ingest {args.runs} runs: {ingest_s:.1f} s wall, {ingest_cpu:.1f} s CPU of this process "
        f"({1000 * ingest_s / args.runs:.1f} ms wall per run)"
    )
    print(
        f"trend of one row over {args.runs} runs: library {1000 * trend_s:.0f} ms wall, {1000 * trend_cpu:.0f} ms CPU"
    )
    print(
        f"`launchbench history trend` as a process: {command_s:.2f} s wall, {command_cpu:.2f} s CPU; of which importing "
        f"launchbench.cli alone: {import_s:.2f} s wall, {import_cpu:.2f} s CPU"
    )
    if size is not None:
        print(f"SQLite file: {size / 2**20:.0f} MiB")
    print(
        f"machine: {os.cpu_count()} cores, load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} at the end"
    )


if __name__ == "__main__":
    main()
