"""The run's own time and its precision, old code against new: ``launchbench run SCENARIO`` alternating
an OLD checkout (importable with PYTHONPATH) and this tree, N runs each, each in a fresh process, on
the same machine back to back. Records every run's wall time and peak resident memory, and per row
(case, mode, metric) the 95% CI width of every run from its results.csv (the ``*_ci_low`` and
``*_ci_high`` columns: docs/columns.md); writes the figures to JSON, a per-row precision comparison
(old median CI width against new, their ratio) to CSV, and prints a summary line.

    python benchmarks/speed_quickstart.py --old .devrun/old                       # quickstart, 3 + 3
    python benchmarks/speed_quickstart.py --old .devrun/old --scenario scenarios/shape_changes.yaml \\
        --old-runs 1 --new-runs 2
    python benchmarks/speed_quickstart.py --old . --new-extra "--max-time 2"     # one tree, two budgets
    python benchmarks/speed_quickstart.py --profile                               # the new code's phases
    python benchmarks/speed_quickstart.py --analyze results/speed/quickstart.json # again, from its runs

The outputs default to results/speed/<scenario>.json and, beside the JSON, <its name>-precision.csv.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import width_test

ROOT = Path(__file__).resolve().parents[1]
CI_LOW, CI_HIGH = "_ci_low", "_ci_high"
RUN_TIMEOUT = 900.0

RowKey = tuple[str, str, str]  # (case, mode, metric)


@dataclass(frozen=True)
class RunFigures:
    """One run of one side: its wall time (seconds), peak resident memory (MiB), exit code, directory
    and the load average (1 minute) before it."""

    side: str
    index: int
    wall_s: float
    peak_rss_mib: float
    returncode: int
    run_dir: str
    load_before: float | None


@dataclass(frozen=True)
class RowComparison:
    """One row's CI widths (the metric's unit) over a side's runs: their medians, the ratio new/old."""

    case: str
    mode: str
    metric: str
    old_width: float
    new_width: float
    ratio: float
    old_runs: int
    new_runs: int


def ci_widths(rows: Iterable[Mapping[str, str]]) -> dict[RowKey, float]:
    """Every row's CI width per metric (high − low) from results.csv rows; empty or non-numeric bounds
    (a mode that was not measured) left out."""
    widths: dict[RowKey, float] = {}
    for row in rows:
        for column, low in row.items():
            if not column.endswith(CI_LOW):
                continue
            metric = column[: -len(CI_LOW)]
            try:
                width = float(row[metric + CI_HIGH]) - float(low)
            except (KeyError, ValueError):
                continue
            if width == width:  # not NaN
                widths[(row["case"], row["mode"], metric)] = width
    return widths


def read_widths(run_dir: Path) -> dict[RowKey, float]:
    """The CI widths of a run directory's results.csv (none when it has no results.csv)."""
    path = run_dir / "results.csv"
    if not path.is_file():
        return {}
    with path.open(newline="") as handle:
        return ci_widths(csv.DictReader(handle))


def compare_widths(
    old: Sequence[Mapping[RowKey, float]], new: Sequence[Mapping[RowKey, float]]
) -> list[RowComparison]:
    """Per row found on both sides: the median CI width over each side's runs and new/old."""
    rows = []
    keys = sorted(set().union(*old) & set().union(*new)) if old and new else []
    for key in keys:
        olds = [w[key] for w in old if key in w]
        news = [w[key] for w in new if key in w]
        before, after = statistics.median(olds), statistics.median(news)
        ratio = after / before if before > 0 else (1.0 if after == before else float("inf"))
        rows.append(RowComparison(*key, before, after, ratio, len(olds), len(news)))
    return rows


def summary_line(scenario: str, runs: Sequence[RunFigures], rows: Sequence[RowComparison]) -> str:
    """One line: each side's median wall time and run count, the speed-up, and how the rows' CI widths
    moved (the median ratio, the widest row, how many rows are wider)."""
    walls = {
        side: [r.wall_s for r in runs if r.side == side and r.returncode == 0] for side in ("old", "new")
    }
    parts = [scenario + ":"]
    for side, values in walls.items():
        parts.append(
            f"{side} {statistics.median(values):.1f} s ({len(values)} runs)," if values else f"{side} no run,"
        )
    if walls["old"] and walls["new"]:
        parts.append(f"{statistics.median(walls['old']) / statistics.median(walls['new']):.2f}x faster;")
    if rows:
        widest = max(rows, key=lambda r: r.ratio)
        wider = sum(r.ratio > 1 for r in rows)
        parts.append(
            f"CI width new/old: median {statistics.median(r.ratio for r in rows):.2f},"
            f" widest {widest.ratio:.2f} ({widest.case} {widest.mode} {widest.metric});"
            f" {wider} of {len(rows)} rows wider"
        )
    else:
        parts.append("no row measured on both sides")
    return " ".join(parts)


def machine() -> dict[str, object]:
    """The machine and versions the figures were taken on."""
    info: dict[str, object] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        info["gpu"] = gpu.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        info["gpu"] = None
    return info


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run_once(
    side: str, index: int, source: Path, scenario: Path, run_dir: Path, log: Path, extra: Sequence[str] = ()
) -> RunFigures:
    """``launchbench run`` of one side in a fresh process (its code first on PYTHONPATH, started in a
    neutral directory so the working directory does not shadow it), with ``extra`` arguments after the
    others (e.g. ``--max-time 2``); its figures."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
    command = [
        sys.executable,
        "-m",
        "launchbench",
        "run",
        str(scenario),
        "--quiet",
        "--out-dir",
        str(run_dir),
        *extra,
    ]
    load = load_average()
    begin = time.perf_counter()
    with log.open("ab") as out, tempfile.TemporaryDirectory() as neutral:
        proc = subprocess.Popen(command, cwd=neutral, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except KeyboardInterrupt:
            proc.kill()
            raise
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - begin
    return RunFigures(side, index, wall, usage.ru_maxrss / 1024, proc.returncode, str(run_dir), load)


def schedule(old_runs: int, new_runs: int, first: str = "old") -> list[tuple[str, int]]:
    """The sides alternating, ``first`` first, then what is left of the longer one."""
    counts = {"old": old_runs, "new": new_runs}
    sides = (first, "new" if first == "old" else "old")
    return [(side, i) for i in range(max(counts.values())) for side in sides if i < counts[side]]


def measure(
    args: argparse.Namespace, scenario: Path, work: Path, written: Callable[[list[RunFigures]], object]
) -> list[RunFigures]:
    """Every run of the schedule; ``written`` is called after each (so a run cut short keeps the rest)."""
    sources = {"old": args.old.resolve(), "new": ROOT}
    extras = {"old": shlex.split(args.old_extra), "new": shlex.split(args.new_extra)}
    scenarios = {"old": (args.old_scenario or scenario).resolve(), "new": scenario}
    runs: list[RunFigures] = []
    for side, index in schedule(args.old_runs, args.new_runs, args.first):
        run_dir = work / f"{side}-{index}"
        log = work / f"{side}-{index}.log"
        figures = run_once(side, index, sources[side], scenarios[side], run_dir, log, extras[side])
        print(f"{side} {index}: {figures.wall_s:.1f} s, exit {figures.returncode}", flush=True)
        runs.append(figures)
        written(runs)
    return runs


def half_against_half(old: Sequence[Mapping[RowKey, float]]) -> str | None:
    """The same per-row test between the first and the second half of the old side's runs (an A/A: what
    the test reads where nothing changed); None with fewer than 4 old runs."""
    if len(old) < 4:
        return None
    half = len(old) // 2
    first, second = old[:half], old[half : 2 * half]
    return width_test.summary(width_test.row_tests(first, second), width_test.overall(first, second))


def analyze(
    scenario: str, runs: Sequence[RunFigures], info: Mapping[str, object], out: Path, table: Path
) -> str:
    """Write the JSON and the precision CSV from the runs; the summary line (with the per-row test of
    width_test.py where each side has 2 runs or more)."""
    widths = {side: [read_widths(Path(r.run_dir)) for r in runs if r.side == side] for side in ("old", "new")}
    old, new = [w for w in widths["old"] if w], [w for w in widths["new"] if w]
    rows = compare_widths(old, new)
    tests = width_test.row_tests(old, new)
    together = width_test.overall(old, new)
    line = summary_line(scenario, runs, rows)
    if tests:
        line += "; " + width_test.summary(tests, together)
    out.parent.mkdir(parents=True, exist_ok=True)
    document = {**info, "scenario": scenario, "runs": [asdict(r) for r in runs], "summary": line}
    document["old_halves"] = half_against_half(old)
    document["all_rows"] = asdict(together) if together is not None else None
    document["rows"] = [asdict(r) for r in rows]
    out.write_text(json.dumps(document, indent=2) + "\n")
    write_precision_table(table, rows, {t.key: t for t in tests})
    return line


TABLE_COLUMNS = ["case", "mode", "metric", "old_ci_width", "new_ci_width", "ratio", "old_runs", "new_runs"]
TEST_COLUMNS = ["gm_ratio", "gm_ratio_low", "gm_ratio_high", "p_wider", "wider_bh5", "detectable_ratio"]


def write_precision_table(
    table: Path, rows: Sequence[RowComparison], tests: Mapping[RowKey, width_test.RowWidthTest]
) -> None:
    """One line per row: the median widths and their ratio, and the row's test where it was tested."""
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TABLE_COLUMNS + TEST_COLUMNS)
        for r in rows:
            line = [r.case, r.mode, r.metric, f"{r.old_width:.6g}", f"{r.new_width:.6g}", f"{r.ratio:.4f}"]
            line += [r.old_runs, r.new_runs]
            test = tests.get((r.case, r.mode, r.metric))
            if test is not None:
                figures = (test.ratio, test.low, test.high, test.p_wider)
                line += [f"{x:.4g}" for x in figures] + [int(test.wider), f"{test.detectable:.4g}"]
            writer.writerow(line)


def profile(scenario: Path, work: Path, out: Path) -> None:
    """The new code's phase profile (benchmarks/profile_phases.py) of one run, to ``out``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    script = ROOT / "benchmarks" / "profile_phases.py"
    command = [
        sys.executable,
        str(script),
        str(scenario),
        "--out",
        str(work / "profile-run"),
        "--json",
        str(out),
    ]
    finished = subprocess.run(command, cwd=work, env=env, check=False, timeout=RUN_TIMEOUT)
    if finished.returncode:
        raise SystemExit(finished.returncode)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--old", type=Path, help="the old checkout (its launchbench importable from here)")
    parser.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "quickstart.yaml")
    parser.add_argument(
        "--old-scenario",
        type=Path,
        help="the scenario file the old code runs (default: --scenario; give the old checkout's own where "
        "this tree's file has settings the old code does not know)",
    )
    parser.add_argument("--old-runs", type=int, default=3)
    parser.add_argument("--new-runs", type=int, default=3)
    parser.add_argument("--first", choices=("old", "new"), default="old", help="the side that runs first")
    for side in ("old", "new"):
        parser.add_argument(
            f"--{side}-extra", default="", help=f"more arguments for the {side} side's run (one string)"
        )
    parser.add_argument(
        "--work", type=Path, help="where the run directories go (a new temporary one by default)"
    )
    parser.add_argument("--out", type=Path, help="the JSON (results/speed/<scenario>.json by default)")
    parser.add_argument(
        "--csv", type=Path, help="the precision CSV (default: beside --out, <its name>-precision.csv)"
    )
    parser.add_argument("--profile", action="store_true", help="write the new code's phase profile instead")
    parser.add_argument("--analyze", type=Path, help="a JSON this script wrote: analyze its runs again")
    args = parser.parse_args(argv)
    scenario = args.scenario.resolve()
    name = scenario.stem
    out = args.out or ROOT / "results" / "speed" / f"{name}{'-profile' if args.profile else ''}.json"
    work = (args.work or Path(tempfile.mkdtemp(prefix="lb-speed-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if args.profile:
        profile(scenario, work, out)
        return
    if args.analyze is not None:
        document = json.loads(args.analyze.read_text())
        runs = [RunFigures(**r) for r in document["runs"]]
        info = {k: v for k, v in document.items() if k not in ("runs", "rows", "summary", "scenario")}
    elif args.old is None:
        parser.error("give --old OLD_CHECKOUT, --profile or --analyze JSON")
    table = args.csv or out.with_name(f"{out.stem}-precision.csv")
    if args.analyze is None:
        info = {
            **machine(),
            "old": str(args.old),
            "old_scenario": str(args.old_scenario or args.scenario),
            "old_extra": args.old_extra,
            "new_extra": args.new_extra,
            "load_before": load_average(),
        }
        runs = measure(args, scenario, work, lambda done: analyze(name, done, info, out, table))
        info["load_after"] = load_average()
    print(analyze(name, runs, info, out, table))
    if any(r.returncode for r in runs):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
