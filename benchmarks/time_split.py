"""Where a finished run's time went, from its results.json alone: the throughput samples' own seconds,
the latency samples', the rest of the cases' time in their workers (preparation, warm-up, settling,
calibration, the output check, the sampling loop's own work) and, given the process's wall time, what
lay outside every case (the command's start, each pass's fresh worker, the parent's writing, the end):

    python benchmarks/time_split.py RUN_DIR_OR_RESULTS_JSON [--wall SECONDS]

A throughput sample's seconds are its per-iteration wall time times the pass's iterations per sample;
a latency sample is one iteration. Per mode and pass it also prints how many samples were taken and
whether the pass met its noise target (T) or ended on another rule (-), with the seconds sampled."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from launchbench.results.schema import LATENCY, WALL, ModeResult, RunRecord
from launchbench.results.store import load_run


@dataclass(frozen=True)
class TimeSplit:
    throughput_s: float
    latency_s: float
    cases_s: float  # the cases' own elapsed time, every pass
    case_passes: int


def mode_seconds(mode: ModeResult) -> tuple[float, float, list[str]]:
    """Throughput and latency seconds sampled by one mode, and a cell per pass (T/- samples:seconds)."""
    throughput = latency = 0.0
    cells = []
    for one in mode.passes:
        walls = one.samples.get(WALL) or []
        wall = sum(walls) * one.iters_per_sample
        throughput, latency = throughput + wall, latency + sum(one.samples.get(LATENCY) or [])
        cells.append(f"{'T' if one.target_met else '-'}{len(walls)}:{wall:.2f}")
    return throughput, latency, cells


def split(record: RunRecord) -> tuple[TimeSplit, list[str]]:
    throughput = latency = cases = 0.0
    passes = 0
    lines = []
    for case in record.cases:
        cases += case.elapsed_s or 0.0
        passes += case.passes_done
        for name, mode in case.modes.items():
            t, lat, cells = mode_seconds(mode)
            throughput, latency = throughput + t, latency + lat
            lines.append(f"{case.case_id:24s} {name:6s} {' '.join(cells)}")
    return TimeSplit(throughput, latency, cases, passes), lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a run directory or its results.json")
    parser.add_argument("--wall", type=float, help="the process's wall time, seconds")
    args = parser.parse_args()
    run = args.run.parent if args.run.name == "results.json" else args.run
    found, lines = split(load_run(run))
    print("\n".join(lines))
    other = found.cases_s - found.throughput_s - found.latency_s
    print(f"{found.case_passes} case-passes; throughput samples {found.throughput_s:.1f} s, latency samples "
          f"{found.latency_s:.1f} s, the rest of the cases' time {other:.1f} s (cases {found.cases_s:.1f} s)")  # fmt: skip
    if args.wall is not None:
        print(f"outside every case: {args.wall - found.cases_s:.1f} s of the {args.wall:.1f} s wall")


if __name__ == "__main__":
    main()
