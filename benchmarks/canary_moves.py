"""The canary's moves over runs' case-passes: for each run directory, every case-pass's graph reading after
the case against the worker's first reading (launchbench.run.canary), as a ratio minus one; per run
the count, standard deviation, largest move and how many passed 2% and the 3% bound, written as JSON.

    python benchmarks/canary_moves.py RUN_DIR [RUN_DIR ...] --out FILE
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

BOUND = 0.03


def moves(results: dict) -> list[float]:
    """Each case-pass's move (one per case and pass: every mode of a case-pass carries the same reading)."""
    out = []
    for case in results["cases"]:
        seen: set[int] = set()
        for mode in case["modes"].values():
            for index, one in enumerate(mode.get("passes") or []):
                canary = one.get("canary") if isinstance(one, dict) else None
                if not canary or index in seen or not canary.get("after"):
                    continue
                seen.add(index)
                out.append(canary["after"]["graph_s_per_node"] / canary["start"]["graph_s_per_node"] - 1)
    return out


def summary(run_dir: Path) -> dict:
    results = json.loads((run_dir / "results.json").read_text())
    found = moves(results)
    return {
        "run": run_dir.name,
        "status": results.get("status"),
        "case_passes": len(found),
        "sd": statistics.pstdev(found) if found else None,
        "largest": max(found, key=abs) if found else None,
        "past_2pct": sum(abs(m) > 0.02 for m in found),
        "past_bound": sum(abs(m) > BOUND for m in found),
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
