"""Where a run's wall time goes: runs scenario files with the profile events file on (RunOptions.profile,
one line per case-pass: launchbench/run/profile.py) and prints each phase's total seconds and share of the
run's wall time, the rest (planning, the console, process teardown) as ``other``.

    python benchmarks/profile_phases.py scenarios/quickstart.yaml [--out RUN_DIR] [--json FILE]
    python benchmarks/profile_phases.py --summarize RUN_DIR/profile.jsonl --wall 41.8

The case's phases are by the backend's clock; the worker's start phases by the host's. A worker's start
is charged to the first case-pass it runs; the wall time counts the part of it its pass waited for
(``ready_s``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

PHASES = (
    "boot_s",
    "backend_s",
    "canary_s",
    "ready_s",
    "prepare_s",
    "warmup_s",
    "settle_s",
    "calibrate_s",
    "sampling_s",
    "check_s",
    "write_s",
)
WORKER = ("boot_s", "backend_s", "canary_s")  # of a worker's start; ready_s: the part its pass waited for


def summarize(profile: Path, wall: float) -> dict[str, float]:
    """Each phase's total seconds over the profile's case-passes, and ``other``: the wall time no part
    accounts for. A worker's start counts with what its pass waited for (``ready_s``): a worker spawned
    as the previous pass ended did part of its start (``boot_s``) while the parent wrote the tables."""
    totals = dict.fromkeys(PHASES, 0.0)
    for line in profile.read_text().splitlines():
        for phase, seconds in json.loads(line)["phases"].items():
            totals[phase] = totals.get(phase, 0.0) + seconds
    totals["other"] = wall - sum(totals[p] for p in PHASES if p not in WORKER)
    totals["wall"] = wall
    return totals


def measure(paths: Sequence[str], run_dir: Path) -> tuple[Path, float]:
    """Run the scenario files into ``run_dir`` with the profile on; its path and the run's wall time."""
    from launchbench.report.run_files import write_tables
    from launchbench.run import runner

    profile = run_dir.parent / f"{run_dir.name}-profile.jsonl"
    begin = time.perf_counter()
    the_plan = runner.plan(list(paths))
    runner.run(the_plan, run_dir, runner.RunOptions(write_tables=write_tables, profile=profile))
    return profile, time.perf_counter() - begin


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("scenarios", nargs="*")
    parser.add_argument("--out", type=Path, help="the run directory (a new temporary one by default)")
    parser.add_argument("--summarize", type=Path, help="a profile.jsonl to summarize instead of running")
    parser.add_argument("--wall", type=float, default=0.0, help="the wall time of the run summarized")
    parser.add_argument("--json", type=Path, help="also write the totals here")
    args = parser.parse_args(argv)
    if args.summarize is not None:
        profile, wall = args.summarize, args.wall
    elif args.scenarios:
        run_dir = args.out or Path(tempfile.mkdtemp(prefix="lb-profile-")) / "run"
        profile, wall = measure(args.scenarios, run_dir)
    else:
        parser.error("give scenario files or --summarize PROFILE")
    totals = summarize(profile, wall)
    for phase, seconds in totals.items():
        share = f"{seconds / wall:6.1%}" if wall > 0 and phase != "wall" else ""
        print(f"{phase:12s} {seconds:9.3f} s {share}")
    if args.json is not None:
        args.json.write_text(json.dumps(totals, indent=2) + "\n")


if __name__ == "__main__":
    main()
