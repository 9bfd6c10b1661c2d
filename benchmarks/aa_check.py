"""A/A check: two back-to-back runs of the same scenario; for every row and the headline metrics, the
two medians' 95% CIs overlap or the medians differ by under 3%.

    python benchmarks/aa_check.py RUN_A RUN_B [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from launchbench.analysis.table import run_table
from launchbench.results.store import load_run

METRICS = ("wall_us_per_launch", "cpu_us_per_launch", "gpu_us_per_iter", "latency_us")
TOLERANCE = 0.03


def compare(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    merged = a.merge(b, on=["scenario", "case", "mode"], suffixes=("_a", "_b"))
    rows = []
    for _, row in merged.iterrows():
        for metric in METRICS:
            ma, mb = row[f"{metric}_a"], row[f"{metric}_b"]
            if pd.isna(ma) and pd.isna(mb):
                continue  # measured in neither run (a graph that could not be captured): nothing to compare
            overlap = (
                row[f"{metric}_ci_low_a"] <= row[f"{metric}_ci_high_b"]
                and row[f"{metric}_ci_low_b"] <= row[f"{metric}_ci_high_a"]
            )
            diff = mb / ma - 1
            rows.append(
                {
                    "case": row["case"],
                    "mode": row["mode"],
                    "metric": metric,
                    "median_a": ma,
                    "median_b": mb,
                    "diff_pct": 100 * diff,
                    "ci_overlap": bool(overlap),
                    "pass": bool(
                        not pd.isna(diff) and (overlap or abs(diff) < TOLERANCE)
                    ),  # measured in one run only: fails
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    table = compare(run_table(load_run(args.run_a)), run_table(load_run(args.run_b)))
    text = table.to_string(index=False, float_format=lambda v: f"{v:.3f}")
    summary = f"\n{int(table['pass'].sum())} of {len(table)} row-metrics pass (CIs overlap or |diff| < {TOLERANCE:.0%}); largest |diff| {table['diff_pct'].abs().max():.2f}%"
    print(text + summary)
    if args.out:
        args.out.write_text(text + summary + "\n")
    raise SystemExit(0 if table["pass"].all() else 1)


if __name__ == "__main__":
    main()
