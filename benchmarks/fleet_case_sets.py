"""The case sets of runs: every (scenario, case, mode) row each run measured, against the first run's.

    python benchmarks/fleet_case_sets.py PLAIN OTHER... [--out FILE]

Prints one line per run (its rows, and the rows it lacks or adds against PLAIN); exit 1 when a set differs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from launchbench.analysis.table import run_table
from launchbench.results.store import load_run

Row = tuple[str, str, str]


def case_set(run_dir: Path) -> list[Row]:
    """The run's (scenario, case, mode) rows, in order, each once."""
    table = run_table(load_run(run_dir))
    return list(dict.fromkeys(zip(table["scenario"], table["case"], table["mode"])))


def differences(plain: list[Row], other: list[Row]) -> tuple[list[Row], list[Row]]:
    """(rows PLAIN has that OTHER lacks, rows OTHER has that PLAIN lacks)."""
    return [r for r in plain if r not in other], [r for r in other if r not in plain]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plain", type=Path)
    parser.add_argument("others", type=Path, nargs="+")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    plain = case_set(args.plain)
    lines = [f"{args.plain}: {len(plain)} rows"]
    same = True
    for other_dir in args.others:
        other = case_set(other_dir)
        lacking, extra = differences(plain, other)
        same = same and not lacking and not extra and sorted(other) == sorted(plain)
        verdict = "the same rows" if not lacking and not extra else f"lacks {lacking}, adds {extra}"
        lines.append(f"{other_dir}: {len(other)} rows, {verdict}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    raise SystemExit(0 if same else 1)


if __name__ == "__main__":
    main()
