"""How long writing a run's tables takes (results.csv and costmodel.csv, as `launchbench run` writes them
at every pass's end), on a committed run: --repeat writes into a scratch folder after one uncounted
write (its imports), each timed; written as JSON with the machine and the load average.

    python benchmarks/speed_tables.py [RUN_DIR] [--repeat 5] [--out results/speed/tables.json]
    python benchmarks/speed_tables.py --cases 1000 --distinct --repeat 2 --out results/speed/tables-distinct.json

``--cases N`` repeats the run's cases under new ids to N (compare_speed.scaled); ``--distinct`` scales each
copy's samples apart, so every row's host levels are fitted as in a real run of N cases (the fits are
counted: ``host_level_fits``, per write). Each timed write starts with no fit kept, as at a pass's end, where
every row has one pass more than at the last.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from compare_speed import scaled

from launchbench.measure import levels
from launchbench.report import run_files
from launchbench.report.run_files import write_tables
from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("run", nargs="?", type=Path, default=ROOT / "results/speed/quickstart-h200-b/new-0")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "results/speed/tables.json")
    parser.add_argument("--cases", type=int, default=None, help="repeat the run's cases to this many")
    parser.add_argument("--distinct", action="store_true", help="scale each copy apart (every fit made)")
    args = parser.parse_args()
    record = load_run(args.run)
    if args.cases:
        record = scaled(record, args.cases, args.distinct)
    fits = counted_fits()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        write_tables(Path(scratch), record)  # the first write imports the table's libraries
        times = []
        fits.clear()
        for _ in range(args.repeat):
            levels.forget_levels()  # a pass's end meets every row with one pass more: no fit kept
            began = time.perf_counter()
            write_tables(Path(scratch), record)
            times.append(time.perf_counter() - began)
    summary = {
        "benchmark": "write_tables (results.csv, costmodel.csv) of one run",
        "run": str(args.run.resolve().relative_to(ROOT))
        if args.run.resolve().is_relative_to(ROOT)
        else str(args.run),
        "cases": len(record.cases),
        "distinct": args.distinct,
        "rows": sum(len(case.modes) for case in record.cases),
        "host_level_fits": len(fits) // max(1, args.repeat),
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


def counted_fits() -> list[int]:
    """A list that gains one entry per host-level mixture fit made from now on, in this process
    (levels._two_components wrapped) or together in worker processes (fitted_together wrapped where
    run_files calls it); the fits' results are unchanged."""
    made: list[int] = []
    fit = levels._two_components
    together = run_files.fitted_together

    def counting(logs):  # type: ignore[no-untyped-def]
        made.append(len(logs))
        return fit(logs)

    @contextlib.contextmanager
    def counted_together(*args, **kwargs):  # type: ignore[no-untyped-def]
        with together(*args, **kwargs) as count:
            made.extend([0] * count)
            yield count

    levels._two_components = counting
    run_files.fitted_together = counted_together
    return made


if __name__ == "__main__":
    main()
