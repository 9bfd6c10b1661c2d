"""How long `launchbench plot` takes on a run of many cases, and its peak memory (the targets: 1,000
cases in ≤ 10 s and < 300 MB).

Builds two runs of N cases from the committed H200 quickstart run, raw samples and passes as measured:
"repeated", its 8 cases repeated under new case ids as benchmarks/compare_speed.py does (each of its two
chains has N / 2 cases over its four lengths: two panels a figure), and "distinct", the same cases each
copy given a parameter of its own (size=0, 1, ...: N / 4 chains swept over length, more than a figure
draws). Each is written as a run directory, and the whole command is timed in a fresh process, the way
a person runs it (interpreter start, reading results.json, the table, every figure at the default
200 dpi):

    python benchmarks/speed_plot.py [--cases 1000] [--repeat 3] [--out results/speed/plot.json]

Each run is plotted two ways, alternating, ``repeat`` times each: ``jobs=1`` (``-j 1``: every figure drawn
in the command's own process, one after another) and ``jobs=auto`` (the default: the figures drawn at once,
one forked process each, at most one per CPU). The CPU seconds are the command's with every process it
waited for; ``peak_rss_mb`` is the largest single process's maximum resident set size (os.wait4's rusage,
which Linux reports in KB), ``peak_tree_pss_mb`` the largest sum of the proportional set sizes of the
command and its children, sampled every 20 ms (a page the forked children share with it counted once). The JSON gives the machine, its cores, the versions of Python and the libraries that draw, the load
average before and after the runs (the wall time is meaningful on an idle machine only), and every
repeat's wall time, CPU time and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import library_versions, timed_process
from compare_speed import scaled

from launchbench.results.environment import host_cpu
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, write_run

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "results" / "quickstart-h200"
LIBRARIES = ("launchbench", "matplotlib", "numpy", "pandas", "scipy", "pydantic")


VARIANTS = {"jobs=1": ["-j", "1"], "jobs=auto": []}  # the command's options of each way measured


def time_plot(run_dir: Path, out_dir: Path, options: list[str]) -> dict[str, float]:
    """Wall s, CPU s, peak RSS MB and peak PSS MB of the process tree of one `launchbench plot` in a fresh
    process."""
    command = [sys.executable, "-m", "launchbench", "plot", str(run_dir), "-d", str(out_dir), "-q", *options]
    timing, child = timed_process(command, stderr=subprocess.PIPE, tree=True)
    if timing.code != 0:
        raise SystemExit(f"launchbench plot failed: {child.stderr.read().decode() if child.stderr else ''}")
    cpu = timing.user_s + timing.system_s
    return {
        "wall_s": round(timing.wall_s, 3),
        "cpu_s": round(cpu, 3),
        "peak_rss_mb": round(timing.peak_rss_kib / 1024, 1),
        "peak_tree_pss_mb": round((timing.peak_tree_pss_kib or 0) / 1024, 1),
    }


def summary(repeats: list[dict[str, float]]) -> dict[str, object]:
    """The wall seconds' best, median and worst, the best CPU seconds and the peaks of memory."""
    walls = [r["wall_s"] for r in repeats]
    return {
        "wall_s": {"best": min(walls), "median": statistics.median(walls), "worst": max(walls)},
        "cpu_s_best": min(r["cpu_s"] for r in repeats),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in repeats),
        "peak_tree_pss_mb": max(r["peak_tree_pss_mb"] for r in repeats),
        "repeats": repeats,
    }


def distinct(run: RunRecord, cases: int) -> RunRecord:
    """The run's cases repeated until it has ``cases`` of them, each copy a chain of its own (a ``size``
    parameter that does not set the chain length)."""
    copies = [
        case.model_copy(update={"case_id": f"{case.case_id}/size={i // len(run.cases)}",
                                "params": {**case.params, "size": i // len(run.cases)}})
        for i, case in zip(range(cases), run.cases * (cases // len(run.cases) + 1))
    ]  # fmt: skip
    return run.model_copy(update={"cases": copies})


def measure(run: RunRecord, repeat: int, tmp: Path) -> dict[str, object]:
    """The run's size, its figures (the same bytes both ways) and every repeat's time and memory, the
    ways of VARIANTS alternating."""
    run_dir = tmp / "run"
    run_dir.mkdir()
    write_run(run_dir, run)
    repeats: dict[str, list[dict[str, float]]] = {name: [] for name in VARIANTS}
    for i in range(repeat):
        for name, options in VARIANTS.items():
            repeats[name].append(time_plot(run_dir, tmp / f"{name}-{i}", options))
    figures = {name: sorted(p.name for p in (tmp / f"{name}-0").iterdir()) for name in VARIANTS}
    first, *others = (tmp / f"{name}-0" for name in VARIANTS)
    same = all(
        (first / f).read_bytes() == (other / f).read_bytes() for other in others for f in figures["jobs=1"]
    )
    return {
        "results_json_mb": round((run_dir / "results.json").stat().st_size / 1e6, 1),
        "figures": figures["jobs=1"],
        "figures_identical_both_ways": same and len({tuple(f) for f in figures.values()}) == 1,
        **{name: summary(one) for name, one in repeats.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "speed" / "plot.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    source = load_run(SOURCE)
    runs = {"repeated": scaled(source, args.cases), "distinct": distinct(source, args.cases)}
    measured = {}
    for name, run in runs.items():
        with tempfile.TemporaryDirectory() as tmp:
            measured[name] = measure(run, args.repeat, Path(tmp))
    result = {
        "command": f"launchbench plot RUN -d DIR -q (one run of {args.cases} cases, figures at 200 dpi)",
        "source": f"{SOURCE.relative_to(ROOT)}, its {len(source.cases)} cases repeated under new ids",
        "machine": {"cpu": host_cpu(), "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": library_versions(LIBRARIES),  # "not installed" where a tree is on PYTHONPATH only
        "load_average_before": [round(v, 2) for v in load_before],
        "load_average_after": [round(v, 2) for v in os.getloadavg()],
        "runs": measured,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    keys = ("wall_s", "cpu_s_best", "peak_rss_mb", "peak_tree_pss_mb")
    for name, one in measured.items():
        for variant in VARIANTS:
            print(name, variant, json.dumps({k: one[variant][k] for k in keys}))  # type: ignore[index]
        print(name, "figures identical both ways:", one["figures_identical_both_ways"])


if __name__ == "__main__":
    main()
