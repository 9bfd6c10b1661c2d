"""How long writing a run's tables takes (results.csv and costmodel.csv, as `launchbench run` writes them
at every pass's end), on a committed run: --repeat writes into a scratch folder after one uncounted
write (its imports), each timed; written as JSON with the machine and the load average.

    python benchmarks/speed_tables.py [RUN_DIR] [--repeat 5] [--out results/speed/tables.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from launchbench.report.run_files import write_tables
from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("run", nargs="?", type=Path, default=ROOT / "results/speed/quickstart-h200-b/new-0")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "results/speed/tables.json")
    args = parser.parse_args()
    record = load_run(args.run)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        write_tables(Path(scratch), record)  # the first write imports the table's libraries
        times = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            write_tables(Path(scratch), record)
            times.append(time.perf_counter() - began)
    summary = {
        "benchmark": "write_tables (results.csv, costmodel.csv) of one run",
        "run": str(args.run.resolve().relative_to(ROOT))
        if args.run.resolve().is_relative_to(ROOT)
        else str(args.run),
        "rows": sum(len(case.modes) for case in record.cases),
        "wall_s": [round(t, 4) for t in times],
        "wall_median_s": round(statistics.median(times), 4),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
        },
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
    }
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
