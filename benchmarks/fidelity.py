"""Fidelity: `launchbench run` against a bare CuPy loop in processes of its own, taking turns.

The reference is benchmarks/bare_loop.py: the scenario's chains written out by hand in plain CuPy, in a
fresh process that imports nothing of launchbench. launchbench is measured the way users run it: `launchbench
run SCENARIO` (real workers, passes of every case in the scenario's order). The two take turns ROUNDS times
(bare first in even rounds, launchbench first in odd ones), each bare turn BARE processes, so both sides meet
the levels the host moves between from one process to the next.

Per row (case and mode):
- graph rows: each round's ratio is launchbench's results.csv median (wall µs per launch) over the median
  of that round's bare processes; the row's ratio is the median over rounds (min and max beside it), within
  ±3% to pass.
- eager rows, level to level: a process's eager launch sits at one of two levels on some hosts, so each side's
  per-process values (launchbench's pass medians, the bare processes' medians) are split into levels where
  the sorted values jump by more than LEVEL_GAP; each level of launchbench is compared with the same level
  of the bare loop (low with low, high with high; a level one side never reached is reported, not compared),
  within ±7% to pass.
- every row, pooled: all of launchbench's per-pass values against all of the bare processes' values, the
  ratio of the two medians with a 95% bootstrap interval (processes resampled, never samples): within the
  bound when the whole interval lies inside it, outside when the whole interval lies beyond it, and
  undecided (None) when the interval straddles the bound: the host's spread between processes was then
  too large for this many processes to tell.

    python benchmarks/fidelity.py [scenarios/quickstart.yaml] [--rounds 3] [--bare 3] [--cpus 2-9] [--out DIR] [-- RUN ARGS]

Where the launching thread runs sets the host-bound rows' level on some hosts, and the scheduler may put
the two sides on different CPUs: the header names the CPUs each side's launching thread ran on (the bare
processes' `cpu`, each launchbench pass's start). ``--cpus`` (a list as taskset takes it, "2-9" or
"3,5,7") confines this process to those CPUs before any turn, so both sides (every process either
starts inherits the set) run on the same ones.

Exit 0 when every compared row is within its bound and no pass was measured in a disturbed state.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from _levels import LEVEL_GAP, levels, match_levels
from _report import write_report
from scipy.stats import bootstrap

from launchbench.results.store import load_run
from launchbench.scenario.expand import expand_scenario

HERE = Path(__file__).resolve().parent
GRAPH_BOUND = 0.03
EAGER_BOUND = 0.07
KINDS = ("empty", "scale")


@dataclass(frozen=True)
class RowFidelity:
    case: str
    mode: str
    compared: str  # "median" (graph) or the level compared (eager: "low", "high")
    launchbench_us: float
    bare_us: float
    ratio: float
    ratio_min: float
    ratio_max: float
    launchbench_n: int
    bare_n: int
    bound: float
    within: bool | None  # None: a level only one side reached (reported, not compared)


def graph_row(case: str, ours: Sequence[float], bare: Sequence[float]) -> RowFidelity:
    """One graph row from each round's launchbench median and bare median (µs per launch)."""
    ratios = [a / b for a, b in zip(ours, bare, strict=True)]
    ratio = statistics.median(ratios)
    return RowFidelity(
        case, "graph", "median", statistics.median(ours), statistics.median(bare), ratio, min(ratios),
        max(ratios), len(ours), len(bare), GRAPH_BOUND, abs(ratio - 1.0) <= GRAPH_BOUND,
    )  # fmt: skip


def eager_rows(case: str, ours: Sequence[float], bare: Sequence[float]) -> list[RowFidelity]:
    """The eager row compared level to level (µs per launch per process). Where one side shows two levels
    and the other one, the other's level is matched to the nearer of the two and the level it never
    reached is reported with ``within`` None (not compared: neither passes nor fails)."""
    our_levels, bare_levels = levels(ours), levels(bare)
    pairs = match_levels(our_levels, bare_levels)
    rows = []
    for name, mine, theirs in pairs:
        reference = statistics.median(theirs)
        ratios = [value / reference for value in mine]
        ratio = statistics.median(mine) / reference
        within = abs(ratio - 1.0) <= EAGER_BOUND if name != "unmatched" else None
        rows.append(
            RowFidelity(
                case,
                "eager",
                name,
                statistics.median(mine),
                reference,
                ratio,
                min(ratios),
                max(ratios),
                len(mine),
                len(theirs),
                EAGER_BOUND,
                within,
            )  # fmt: skip
        )
    return rows


def pooled_row(case: str, mode: str, ours: Sequence[float], bare: Sequence[float]) -> RowFidelity:
    """Every launchbench pass value against every bare process value: the ratio of medians, its 95%
    bootstrap interval as min/max, decided only where the interval is wholly inside or outside the bound."""
    ratio = statistics.median(ours) / statistics.median(bare)
    low, high = ratio, ratio
    if len(ours) > 1 and len(bare) > 1:
        ci = bootstrap(
            (np.asarray(ours), np.asarray(bare)), lambda a, b, axis: np.median(a, axis) / np.median(b, axis),
            n_resamples=4000, method="percentile", random_state=np.random.default_rng(0), vectorized=True,
        ).confidence_interval  # fmt: skip
        low, high = float(ci.low), float(ci.high)
    bound = GRAPH_BOUND if mode == "graph" else EAGER_BOUND
    within: bool | None = None  # the interval straddles the bound: undecided
    if 1 - bound <= low and high <= 1 + bound:
        within = True
    elif high < 1 - bound or low > 1 + bound:
        within = False
    return RowFidelity(
        case, mode, "pooled", statistics.median(ours), statistics.median(bare), ratio, low, high, len(ours),
        len(bare), bound, within,
    )  # fmt: skip


def bare_turn(specs: list[str], processes: int) -> list[dict[str, object]]:
    """``processes`` fresh bare-loop processes, one after the other; one JSON row per case and mode each."""
    rows: list[dict[str, object]] = []
    for index in range(processes):
        done = subprocess.run(
            [sys.executable, str(HERE / "bare_loop.py"), *specs], capture_output=True, text=True, check=True
        )
        rows += [{**json.loads(line), "process": index} for line in done.stdout.splitlines() if line]
    return rows


def launchbench_turn(scenario: str, out: Path, extra: list[str]) -> Path:
    """One `launchbench run` of the scenario into ``out``; returns the run directory."""
    command = [sys.executable, "-m", "launchbench", "run", scenario, "-d", str(out), "-q", *extra]
    subprocess.run(command, check=True)
    return out


@dataclass(frozen=True)
class RunValues:
    """What the table reads of one launchbench run."""

    medians: dict[tuple[str, str], float]  # results.csv's, µs per launch, by (case, mode)
    passes: dict[tuple[str, str], list[float]]  # each pass's median, µs per launch
    disturbed: int  # passes measured in a disturbed state
    cpus: set[int]  # the CPUs its launching thread started its passes on


def run_values(run_dir: Path) -> RunValues:
    """A run's results.csv medians, its per-pass medians, its disturbed passes and its passes' CPUs."""
    table = pd.read_csv(run_dir / "results.csv")
    medians = {(r.case, r.mode): float(r.wall_us_per_launch) for r in table.itertuples()}
    record = load_run(run_dir)
    passes: dict[tuple[str, str], list[float]] = {}
    disturbed, cpus = 0, set()
    for case in record.cases:
        disturbed += case.disturbed_passes
        for mode, result in case.modes.items():
            per_launch = 1e6 / case.launches_per_iter
            passes[case.case_id, mode] = [statistics.median(p.samples["wall_s_per_iter"]) * per_launch
                                          for p in result.passes]  # fmt: skip
            cpus |= {p.host.start.cpu for p in result.passes if p.host.start and p.host.start.cpu is not None}
    return RunValues(medians, passes, disturbed, cpus)


def specs_of(scenario: str) -> list[str]:
    """KIND:LENGTH for every case of the scenario, in its order (one kind per chain, as the quickstart)."""
    specs = []
    for case in expand_scenario(scenario):
        kinds = {step.kind for step in case.steps}
        if len(kinds) != 1 or not kinds <= set(KINDS):
            raise SystemExit(f"{case.case_id}: the bare loop knows chains of one kind of {KINDS}")
        specs.append(f"{kinds.pop()}:{case.launches_per_iter}")
    return specs


def cpu_list(text: str) -> set[int]:
    """CPUs from "2-9", "3,5,7" or "0-3,8"."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


def placement(raw: dict[str, list], ours: set[int]) -> str:
    """The CPUs each side's launching thread ran on: every bare process's and every launchbench pass's
    (``ours``, from run_values)."""
    bare = {int(r["cpu"]) for turn in raw["bare"] for r in turn if r.get("cpu") is not None}
    confined = f"confined to CPUs {raw['cpus']}; " if raw.get("cpus") else ""
    return f"{confined}launching thread on CPUs {sorted(ours)} (launchbench's passes), {sorted(bare)} (bare processes)"


def collect(args: argparse.Namespace, out: Path) -> dict[str, list]:
    """The turns: every bare process's rows and every run's directory, in the order they ran."""
    specs = specs_of(args.scenario)
    raw: dict[str, list] = {"bare": [], "runs": [], "order": [], "cpus": []}
    if args.cpus:
        os.sched_setaffinity(0, cpu_list(args.cpus))
        raw["cpus"] = sorted(os.sched_getaffinity(0))
    for rnd in range(args.rounds):
        turns = ("bare", "launchbench") if rnd % 2 == 0 else ("launchbench", "bare")
        raw["order"].append(list(turns))
        for turn in turns:
            if turn == "bare":
                raw["bare"].append(bare_turn(specs, args.bare))
            else:
                raw["runs"].append(launchbench_turn(args.scenario, out / f"run-{rnd}", args.run).name)
    return raw


def analyse(raw: dict[str, list], out: Path) -> tuple[list[RowFidelity], int, set[int]]:
    """Rows from the collected turns (round k's bare turn with run k), the disturbed passes, and the CPUs
    launchbench's passes started on."""
    graph: dict[str, tuple[list[float], list[float]]] = {}
    eager: dict[str, tuple[list[float], list[float]]] = {}
    pooled: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    disturbed, cpus = 0, set()
    for run_name, bare_rows in zip(raw["runs"], raw["bare"], strict=True):
        run = run_values(out / run_name)
        passes = run.passes
        disturbed += run.disturbed
        cpus |= run.cpus
        for (case, mode), value in run.medians.items():
            mine = [r["median_s"] * 1e6 for r in bare_rows if r["case"] == case and r["mode"] == mode]
            pooled.setdefault((case, mode), ([], []))[0].extend(passes[case, mode])
            pooled[case, mode][1].extend(mine)
            if mode == "graph":
                graph.setdefault(case, ([], []))[0].append(value)
                graph[case][1].append(statistics.median(mine))
            elif mode == "eager":
                eager.setdefault(case, ([], []))[0].extend(passes[case, mode])
                eager[case][1].extend(mine)
    rows = [graph_row(case, *graph[case]) for case in graph]
    rows += [row for case in eager for row in eager_rows(case, *eager[case])]
    rows += [pooled_row(case, mode, *values) for (case, mode), values in pooled.items()]
    return rows, disturbed, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", default="scenarios/quickstart.yaml")
    parser.add_argument("--rounds", type=int, default=3, help="turns of each side")
    parser.add_argument("--bare", type=int, default=3, help="bare-loop processes per turn")
    parser.add_argument("--out", type=Path, required=True, help="folder for the runs, the table and raw.json")
    parser.add_argument(
        "--reanalyse", action="store_true", help="only the table, from OUT/raw.json and OUT's run folders"
    )
    parser.add_argument("--cpus", help="confine both sides to these CPUs (taskset's list: 2-9 or 3,5,7)")
    parser.add_argument("run", nargs="*", help="after --: more options for `launchbench run`")
    args = parser.parse_args()
    started = time.time()
    if args.reanalyse:
        raw = json.loads((args.out / "raw.json").read_text())
    else:
        raw = collect(args, args.out)
        (args.out / "raw.json").write_text(json.dumps(raw) + "\n")
    rows, disturbed, cpus = analyse(raw, args.out)
    table = pd.DataFrame([asdict(r) for r in rows]).sort_values(["mode", "case", "compared"])
    processes = 1 + max(int(row["process"]) for turn in raw["bare"] for row in turn)
    took = "" if args.reanalyse else f", {time.time() - started:.0f} s"
    header = (
        f"fidelity: `launchbench run {args.scenario}` against benchmarks/bare_loop.py in its own processes, "
        f"{len(raw['runs'])} turns each ({processes} bare processes a turn){took}; "
        f"passes measured in a disturbed state: {disturbed}; {placement(raw, cpus)}\n"
        "graph: ratio = median over turns of (results.csv median / median of the turn's bare processes), min/max over "
        f"turns, bound ±{GRAPH_BOUND:.0%}; eager: per-process values split into levels (sorted values more than "
        f"{LEVEL_GAP:.0%} apart), each launchbench level against the bare loop's same level, bound ±{EAGER_BOUND:.0%}; "
        "pooled: every pass value against every bare process value, ratio of medians, min/max its 95% bootstrap "
        "interval (within: the interval inside the bound; None: it straddles the bound, undecided)\n"
    )
    write_report(table, header, args.out, "fidelity", digits=3)
    compared = table["within"].dropna()
    raise SystemExit(0 if bool(compared.astype(bool).all()) and disturbed == 0 else 1)


if __name__ == "__main__":
    main()
