"""`launchbench compare` of two 1,000-case runs by an older tree and by this one, alternating, each
invocation a fresh process (the interpreter's start, the imports, reading both results.json, the
statistics, the CSV), with every CSV checked to be the same on both sides (or, where the last digits moved, the largest relative
difference of a number between them; any other difference is None):

    python benchmarks/compare_trees.py OLD_TREE [--pairs 5] [--cases 1000] [--new-one-job] [--table] [--out FILE.json]

``--table`` writes the command's default output instead of the CSV, the verdict table as printed to a CI
log or a pipe (``--format table``: the same plain console), and checks that every side wrote the same text.

OLD_TREE is a folder holding an older ``launchbench`` package (``git archive COMMIT launchbench | tar -x
-C OLD_TREE``). The two runs are built once, by this tree, from the committed H200 quickstart runs with
every copy's samples scaled apart (speed_compare.synthetic_runs, ``--distinct``). Each invocation is
``python -m launchbench compare A B --format csv -o FILE``, run from an empty folder with PYTHONPATH set to
the tree (and to EXTRA_PATH, where set, before it). Prints one line per invocation and writes the wall, user
and system seconds and the peak resident memory of each, the medians, whether the CSVs agree, the machine,
the versions and the load average before and after to --out. ``--new-one-job`` adds a third side, this tree
with ``-j 1`` (the rows compared in the command's own process, none forked), each side first in turn.
"""

from __future__ import annotations

import csv as csv_module
import dataclasses
import io
import itertools
import json
import os
import statistics
import tempfile
from pathlib import Path

from _report import library_versions, old_tree_parser, timed_process
from compare_speed import compare_command
from speed_compare import PACKAGES, machine, synthetic_runs

ROOT = Path(__file__).resolve().parent.parent


def invoke(
    tree: Path, runs: list[Path], output: Path, folder: Path, options: list[str], fmt: str = "csv"
) -> dict[str, float]:
    """One compare in a fresh process: its wall, user and system seconds (with the processes it forked)
    and peak RSS (KiB)."""
    extra = os.environ.get("EXTRA_PATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*([extra] if extra else []), str(tree)])}
    timing, _ = timed_process([*compare_command(runs, output, fmt), *options], env, folder)
    if timing.code != 0:
        raise SystemExit(f"{tree}: compare exited {timing.code}")
    return {k: v for k, v in dataclasses.asdict(timing).items() if k not in ("code", "peak_tree_pss_kib")}


def largest_difference(texts: set[bytes]) -> float | None:
    """Over every pair of the CSVs, the largest relative difference of two numeric cells in one place
    (0.0 when they are the same text); None when they differ in shape or in a cell that is not a number."""
    tables = [list(csv_module.reader(io.StringIO(text.decode()))) for text in texts]
    largest = 0.0
    for other in tables[1:]:
        if [len(row) for row in other] != [len(row) for row in tables[0]]:
            return None
        for cell, was in zip(itertools.chain(*other), itertools.chain(*tables[0])):
            if cell == was:
                continue
            try:
                a, b = float(cell), float(was)
            except ValueError:
                return None
            largest = max(largest, abs(a - b) / max(abs(a), abs(b)))
    return largest


def main() -> None:
    parser = old_tree_parser(__doc__, pairs=5)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument(
        "--new-one-job",
        action="store_true",
        help="a third side: this tree with -j 1 (every row compared in the command's own process)",
    )
    parser.add_argument("--table", action="store_true", help="the verdict table as text, not the CSV")
    args = parser.parse_args()
    fmt = "table" if args.table else "csv"
    load_before = os.getloadavg()[0]
    sides = {"old": (args.old.resolve(), []), "new": (ROOT, [])}
    if args.new_one_job:
        sides["new -j 1"] = (ROOT, ["-j", "1"])
    timings: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        runs = synthetic_runs(folder, args.cases, distinct=True)
        texts: set[bytes] = set()
        for k in range(args.pairs):
            order = list(sides)[k % len(sides) :] + list(sides)[: k % len(sides)]  # each side first in turn
            for side in order:
                output = folder / f"{side.replace(' ', '')}-{k}.{fmt}"
                tree, options = sides[side]
                one = invoke(tree, runs, output, folder, options, fmt)
                texts.add(output.read_bytes())
                timings[side].append(one)
                print(
                    f"{side} {one['wall_s']:.2f} s wall, {one['user_s']:.2f} s user, {one['peak_rss_kib']} KiB"
                )
    summary = {
        "benchmark": f"launchbench compare A B --format {fmt} -o FILE, two runs of {args.cases} distinct cases",
        "old_tree": str(args.old),
        "timings": timings,
        "median_wall_s": {s: statistics.median(t["wall_s"] for t in ts) for s, ts in timings.items()},
        "median_user_s": {s: statistics.median(t["user_s"] for t in ts) for s, ts in timings.items()},
        f"{fmt}_identical": len(texts) == 1,
        "csv_largest_relative_difference": None if args.table else largest_difference(texts),
        "machine": machine(),
        "versions": library_versions(PACKAGES),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg()[0],
    }
    print(
        json.dumps(
            {
                k: summary[k]
                for k in (
                    "median_wall_s",
                    "median_user_s",
                    f"{fmt}_identical",
                    "csv_largest_relative_difference",
                )
            }
        )
    )
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
