"""The canary's moves over runs' case-passes: for each run directory, every case-pass's graph reading after
the case against the worker's first reading (``RunRecord.canary_checks``, as the run's own canary line
reads them); per run the count, standard deviation, largest move and how many passed 2% and the run's
bound (launchbench.run.canary.GRAPH_BOUND), written as JSON.

    python benchmarks/canary_moves.py RUN_DIR [RUN_DIR ...] --out FILE
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from launchbench.results.store import load_run
from launchbench.run.canary import GRAPH_BOUND


def summary(run_dir: Path) -> dict:
    run = load_run(run_dir)
    found = [check.graph_shift for _, check in run.canary_checks()]
    return {
        "run": run_dir.name,
        "status": run.status,
        "case_passes": len(found),
        "sd": statistics.pstdev(found) if found else None,
        "largest": max(found, key=abs) if found else None,
        "past_2pct": sum(abs(m) > 0.02 for m in found),
        "past_bound": sum(abs(m) > GRAPH_BOUND for m in found),
        "moves": [round(m, 5) for m in found],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [summary(run) for run in args.runs if (run / "results.json").exists()]
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    for row in rows:
        print(
            row["run"],
            row["case_passes"],
            f"sd {row['sd']:.4f}",
            f"largest {row['largest']:+.4f}",
            f"past 2% {row['past_2pct']}",
            f"past 3% {row['past_bound']}",
        )


if __name__ == "__main__":
    main()
