"""How long `launchbench compare` takes on two runs of many cases (the target: 1,000 cases in 2 s).

Builds two runs of N cases each from the committed H200 quickstart runs (their 8 cases repeated
under new case ids, raw samples and passes as measured), writes them as run directories, and times
the whole command in a fresh process, the way CI runs it:

    python benchmarks/compare_speed.py [--cases 1000] [--repeat 3] [--distinct]

With ``--distinct`` every copy's samples are scaled by 1 + 1e-4 × its copy number, so no two rows share
their pass medians, as in a real run of that many cases: without it the copies' host-level fits are
made once and reused (launchbench.measure.levels caches them by their values), which a real run
does not allow.

The first line gives the cores and the 1-minute load average before the runs, the last the load average
after them: the wall time is meaningful on an idle machine only.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, write_run

ROOT = Path(__file__).resolve().parent.parent
DISTINCT_STEP = 1e-4
SOURCES = (ROOT / "results" / "quickstart-h200", ROOT / "results" / "quickstart-h200-b")


def compare_command(runs: Sequence[str | Path], output: Path, fmt: str = "csv") -> list[str]:
    """``python -m launchbench compare A B --format FMT -o OUTPUT`` with this interpreter."""
    return [
        sys.executable,
        "-m",
        "launchbench",
        "compare",
        *map(str, runs),
        "--format",
        fmt,
        "-o",
        str(output),
    ]


def scaled(run: RunRecord, cases: int, distinct: bool = False) -> RunRecord:
    """The run with its cases repeated under new ids until it has ``cases`` of them; ``distinct``: each
    copy's samples scaled by 1 + DISTINCT_STEP × its copy number."""
    copies = []
    for i, case in zip(range(cases), (run.cases * (cases // len(run.cases) + 1))):
        copy = i // len(run.cases)
        update: dict[str, object] = {"case_id": f"{case.case_id}/copy={copy}"}
        if distinct and copy:
            factor = 1 + DISTINCT_STEP * copy
            update["modes"] = {
                name: mode.with_samples({k: [v * factor for v in vs] for k, vs in mode.samples.items()})
                for name, mode in case.modes.items()
            }
        copies.append(case.model_copy(update=update))
    return run.model_copy(update={"cases": copies})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--distinct", action="store_true", help="no two rows with the same pass medians")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} before the runs")
    with tempfile.TemporaryDirectory() as tmp:
        dirs = []
        for name, source in zip("ab", SOURCES):
            target = Path(tmp) / name
            target.mkdir()
            write_run(target, scaled(load_run(source), args.cases, args.distinct))
            dirs.append(str(target))
        command = compare_command(dirs, Path(tmp) / "out.csv")
        walls, cpus = [], []
        for _ in range(args.repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            walls.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    print(
        f"launchbench compare, two runs of {args.cases} cases (8 H200 quickstart cases repeated"
        f"{', each copy scaled apart' if args.distinct else ''}), best of {args.repeat}: "
        f"wall {min(walls):.2f} s, CPU {min(cpus):.2f} s (wall: {', '.join(f'{t:.2f}' for t in walls)} s; "
        f"CPU time counts only this command's process, so it reads the same on a busy machine)"
    )
    print(f"load average {os.getloadavg()[0]:.1f} after the runs")


if __name__ == "__main__":
    main()
