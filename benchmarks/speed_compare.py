"""How long `launchbench compare` takes on two runs of 1,000 cases (the target: 2 s), written as JSON.

Builds two runs of N cases each from the committed H200 quickstart runs (their 8 cases repeated under
new case ids, raw samples and passes as measured: compare_speed.scaled), or takes two given run
directories, and times the whole command in a fresh process, the way CI runs it (interpreter start,
reading both results.json files, the statistics, the CSV written), several times:

    python benchmarks/speed_compare.py [--cases 1000] [--repeat 5] [--runs A B] [--out results/speed/compare.json]
    python benchmarks/speed_compare.py --distinct --repeat 2 --out results/speed/compare-distinct.json
    python benchmarks/speed_compare.py --table --out results/speed/compare-table.json
    python benchmarks/speed_compare.py --table --columns 80 --out results/speed/compare-table-80.json

``--table`` times the command's default output instead of the CSV: the verdict table, printed to a pipe
(as in a CI log: rich's plain console, as wide as the table). ``--columns N`` with it: printed as to a
terminal N columns wide (the command's environment sets COLUMNS=N and TTY_COMPATIBLE=1, so rich lays
the table out for that terminal: the widest layout that fits N columns).

``--distinct`` scales each copy's samples apart, so no two rows share their pass medians and every
host-level fit is made (without it the copies' fits are made once and reused: a real run of 1,000
cases has 1,000 cases' worth of them).

It prints one line per repeat and the summary, and writes the summary (wall and CPU time of every
repeat, their best and median, the machine, the versions, the load average before and after) to
``--out``. Then one more fresh process runs the command with ``time.process_time`` around each step
(the imports, reading, the comparison, its mixture fits, the CSV), records which heavy modules the
command imported (``imported``), counts the
host-level mixture fits made in the command's process, those made together in worker processes
(``fits_in_workers``: measure.levels.fitted_together, whose CPU the steps do not hold) and the series
ended at one level before a fit, and the summary adds them (``steps_cpu_s``, ``host_levels``). The CPU time counts only the command's process, so it reads about the same on a busy
machine; the wall time is meaningful on an idle one.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from _report import library_versions
from compare_speed import SOURCES, scaled

from launchbench.results.store import load_run, write_run

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("launchbench", "numpy", "scipy", "pandas", "pydantic", "scikit-learn", "click")


def synthetic_runs(folder: Path, cases: int, distinct: bool = False) -> list[Path]:
    """Two run directories of ``cases`` cases each under ``folder`` (a: quickstart-h200, b: its -b);
    ``distinct``: each copy's samples scaled apart (compare_speed.scaled), as a real run's rows are."""
    dirs = []
    for name, source in zip("ab", SOURCES):
        target = folder / name
        target.mkdir()
        write_run(target, scaled(load_run(source), cases, distinct))
        dirs.append(target)
    return dirs


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command`` (CPU: the child's user + system time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def output_args(table: bool, output: Path) -> list[str]:
    """The command's output options: none for the table (printed to stdout), else a CSV to ``output``."""
    return [] if table else ["--format", "csv", "-o", str(output)]


def measure_steps(dirs: list[Path], output: Path, table: bool = False) -> dict[str, object]:
    """The command run in this process with each step's CPU seconds taken (run it in a fresh one)."""
    clock = time.process_time
    start = clock()
    import launchbench.analysis.compare as analysis_compare
    import launchbench.cli as cli
    import launchbench.cli.compare as cli_compare
    from launchbench.measure import levels
    from launchbench.results import store

    cpu: dict[str, float] = {"imports": clock() - start}
    counts = {"mixture_fits": 0, "ended_before_a_fit": 0}

    def timed_step(module: object, name: str, step: str, count: str | None = None) -> None:
        original = getattr(module, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            begun = clock()
            result = original(*args, **kwargs)
            cpu[step] = cpu.get(step, 0.0) + clock() - begun
            if count is not None and result is not False:
                counts[count] += 1
            return result

        setattr(module, name, wrapper)

    timed_step(store, "load_run", "reading")
    timed_step(analysis_compare, "compare_runs", "comparison (with its fits)")
    timed_step(levels, "_two_components", "mixture fits", "mixture_fits")
    timed_step(levels, "splits_stay_close", "sorted-split checks", "ended_before_a_fit")
    timed_step(cli_compare, "publish", "the table" if table else "the CSV")
    together = analysis_compare.fitted_together

    @contextlib.contextmanager
    def counted_together(*args: object, **kwargs: object) -> Iterator[int]:
        with together(*args, **kwargs) as made:  # type: ignore[arg-type]
            counts["fits_in_workers"] = counts.get("fits_in_workers", 0) + made
            yield made

    analysis_compare.fitted_together = counted_together  # type: ignore[assignment]
    sys.argv = ["launchbench", "compare", *map(str, dirs), *output_args(table, output)]
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):  # click exits
        cli.main()
    cpu["in all, after the interpreter started"] = clock() - start
    imported = {name: name in sys.modules for name in ("scipy.stats", "scipy.optimize", "sklearn", "pandas")}
    steps = {k: round(v, 3) for k, v in cpu.items()}
    return {"steps_cpu_s": steps, "host_levels": counts, "imported": imported}


def steps_of(
    dirs: list[Path], output: Path, table: bool = False, env: dict[str, str] | None = None
) -> dict[str, object]:
    """measure_steps in a fresh process (this script with --steps-of)."""
    command = [sys.executable, __file__, "--steps-of", *map(str, dirs), str(output)]
    command += ["--table"] if table else []
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return dict(json.loads(done.stdout.splitlines()[-1]))


def machine() -> dict[str, object]:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")),
        platform.processor(),
    )
    return {"cpu": cpu, "cores": os.cpu_count(), "system": platform.platform()}


def _cpuinfo() -> list[str]:
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def terminal(columns: int | None) -> dict[str, str] | None:
    """The command's environment for a terminal ``columns`` wide (None: this process's, as it is)."""
    return None if columns is None else {**os.environ, "COLUMNS": str(columns), "TTY_COMPATIBLE": "1"}


def summary(
    walls: list[float],
    cpus: list[float],
    cases: int,
    loads: tuple[float, float],
    table: bool = False,
    columns: int | None = None,
) -> dict[str, object]:
    shown = "a pipe" if columns is None else f"a terminal {columns} columns wide"
    form = f"A B, the table printed to {shown}" if table else "A B --format csv -o FILE"
    return {
        "benchmark": f"launchbench compare {form}, two runs of {cases:,} cases",
        "cases": cases,
        "repeats": len(walls),
        "wall_s": [round(w, 3) for w in walls],
        "cpu_s": [round(c, 3) for c in cpus],
        "wall_best_s": round(min(walls), 3),
        "wall_median_s": round(statistics.median(walls), 3),
        "cpu_best_s": round(min(cpus), 3),
        "cpu_median_s": round(statistics.median(cpus), 3),
        "load_average_before": round(loads[0], 2),
        "load_average_after": round(loads[1], 2),
        "machine": machine(),
        "versions": library_versions(PACKAGES),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--runs", nargs=2, type=Path, metavar=("A", "B"), help="two run directories to compare"
    )
    parser.add_argument("--distinct", action="store_true", help="scale each copy apart (every fit made)")
    parser.add_argument("--table", action="store_true", help="time the default table, not the CSV")
    parser.add_argument("--columns", type=int, help="with --table: as printed to a terminal this wide")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "speed" / "compare.json")
    parser.add_argument("--steps-of", nargs=3, type=Path, help=argparse.SUPPRESS)  # A B OUTPUT
    args = parser.parse_args()
    if args.steps_of:
        print(json.dumps(measure_steps(args.steps_of[:2], args.steps_of[2], args.table)))
        return
    if args.columns is not None and not args.table:
        parser.error("--columns needs --table")
    env = terminal(args.columns)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        dirs = args.runs or synthetic_runs(Path(tmp), args.cases, args.distinct)
        cases = len(load_run(dirs[0]).cases)
        command = [sys.executable, "-m", "launchbench", "compare", *map(str, dirs)]
        command += output_args(args.table, Path(tmp) / "out.csv")
        walls, cpus = [], []
        for n in range(args.repeat):
            wall, cpu = timed(command, env)
            walls.append(wall)
            cpus.append(cpu)
            print(f"repeat {n + 1}: wall {wall:.2f} s, CPU {cpu:.2f} s")
        steps = steps_of(list(dirs), Path(tmp) / "steps.csv", args.table, env)
    result = {
        **summary(walls, cpus, cases, (load_before, os.getloadavg()[0]), args.table, args.columns),
        **steps,
        "distinct": args.distinct,
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
