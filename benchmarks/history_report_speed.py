"""How long `launchbench history report` takes over many runs, how much memory it holds at its peak and how
large a page it writes (the targets: 1,000 runs in under 20 s and 200 MB, the page under 5 MB).

    python benchmarks/history_report_speed.py [--runs 1000] [--repeat 3] [--keep DIR] [--reuse DIR]

The runs are tests/history/synth.py's series built from the committed H200 quickstart runs' raw passes
(16 rows, 5 passes each, a day apart; host drift on host-bound rows; the graph rows 8% slower and the
driver changed from the middle run on), ingested into a SQLite file. The report runs --repeat times as a
process, the whole command (interpreter start, queries, change points, the page); each gives its wall
and CPU time and its peak resident memory (the kernel's ru_maxrss of that process). Prints the figures,
the cores and the 1-minute load average before and after; writes nothing else (the runs, the database and
the page live in a temporary directory unless --keep is given; --reuse DIR measures again on what --keep
left).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "history"))

from synth import SeriesSpec, series  # noqa: E402

from launchbench.history.db import HistoryDB  # noqa: E402
from launchbench.history.ingest import ingest_run_dir  # noqa: E402


def build(work: Path, runs: int) -> str:
    """The series' run directories under ``work/runs``, ingested into ``work/history.sqlite``; its URL."""
    spec = SeriesSpec(runs=runs, graph_step=1.08, step_at=runs // 2 + 1, env_change={"driver": "590.10.01"})
    t0 = time.perf_counter()
    dirs = series(work / "runs", spec)
    t1 = time.perf_counter()
    url = f"sqlite:///{work / 'history.sqlite'}"
    with HistoryDB(url) as db:
        for d in dirs:
            ingest_run_dir(db, d)
    t2 = time.perf_counter()
    print(f"{runs} runs written in {t1 - t0:.1f} s, ingested in {t2 - t1:.1f} s")
    return url


def measure(url: str, out: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak resident MiB of one `history report` process."""
    command = [sys.executable, "-m", "launchbench", "history", "report", "--db", url, "-d", str(out)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"history report failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss: KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="times the report is run (default 3)")
    parser.add_argument("--keep", type=Path, help="keep the run directories, database and page here")
    parser.add_argument("--reuse", type=Path, help="measure the report again on what --keep left here")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} before")
    if args.reuse is not None:
        work, url = args.reuse, f"sqlite:///{args.reuse / 'history.sqlite'}"
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="lb-history-report-"))
        url = build(work, args.runs)
    out = work / "report"
    for _ in range(args.repeat):
        load = os.getloadavg()[0]
        wall, cpu, rss = measure(url, out)
        print(
            f"`launchbench history report`: {wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MiB "
            f"(load average {load:.2f} as it started)"
        )
    page = out / "index.html"
    print(f"page {page.stat().st_size / 1e6:.2f} MB ({page.stat().st_size:,} bytes)")
    print(f"load average {os.getloadavg()[0]:.2f} after")


if __name__ == "__main__":
    main()
