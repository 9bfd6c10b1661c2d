"""What a run's forked workers cost: `launchbench run` of a 4-case scenario measured over --passes passes
(one worker forked from the run's fork server for each pass) on the tests' scripted CPU backend
(tests/fakes.py: no GPU), by an older tree and by this one, alternating, each run a fresh process:

    python benchmarks/worker_forks.py OLD_TREE [--pairs 4] [--passes 20] [--out FILE.json]

OLD_TREE is a folder holding an older ``launchbench`` package (``git archive COMMIT launchbench | tar -x
-C OLD_TREE``). Each run is ``python -m launchbench run SCENARIO -d DIR -q`` with PYTHONPATH set to the
tree and to tests/. The fork server and the workers it forks are not the command's children once it
ends, so no rusage counts them: each run's CPU is the whole machine's busy time over the run (from
/proc/stat: user, nice, system, irq and softirq, summed over the cores), read on an otherwise idle
machine. Prints one line a run and writes the wall and busy seconds of each, their medians, the machine,
the versions and the load average before and after to --out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import alternate, library_versions, old_tree_parser
from speed_compare import machine

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = """name: forks
description: four cases, one worker a pass
sweep:
  length: [1, 10, 20, 40]
chains:
  empty:
    - kind: empty
      repeat: $length
measure: {{max_time: 0.2, passes: {passes}, min_samples: 5, warmup_time: 0.01}}
"""
BUSY_FIELDS = (0, 1, 2, 5, 6)  # user, nice, system, irq, softirq of /proc/stat's "cpu" line


def busy_seconds() -> float:
    """The machine's busy CPU seconds since boot, over all cores."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    return sum(int(fields[i]) for i in BUSY_FIELDS) / os.sysconf("SC_CLK_TCK")


def one_run(tree: Path, scenario: Path, folder: Path) -> dict[str, float]:
    """One run in a fresh process: its wall seconds and the machine's busy seconds meanwhile."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "tests")]),
           "LAUNCHBENCH_BACKEND": "fakes:scripted_backend"}  # fmt: skip
    out = Path(tempfile.mkdtemp(dir=folder))
    busy, begin = busy_seconds(), time.perf_counter()
    code = subprocess.call([sys.executable, "-m", "launchbench", "run", str(scenario), "-d", str(out / "run"), "-q"],
                           env=env, cwd=folder, stdout=subprocess.DEVNULL)  # fmt: skip
    wall, busy = time.perf_counter() - begin, busy_seconds() - busy
    if code != 0 or not (out / "run" / "results.json").is_file():
        raise SystemExit(f"{tree}: run exited {code}")
    return {"wall_s": wall, "busy_s": busy}


def main() -> None:
    parser = old_tree_parser(__doc__, pairs=4)
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        scenario = folder / "forks.yaml"
        scenario.write_text(SCENARIO.format(passes=args.passes))
        sides = {"old": args.old.resolve(), "new": ROOT}
        runs, medians = alternate(sides, args.pairs, lambda _name, tree: one_run(tree, scenario, folder))
    if args.out:
        document = {
            "passes": args.passes, "cases": 4, "old_tree": str(args.old), "runs": runs, "medians": medians,
            "machine": machine(), "versions": library_versions(("pydantic", "numpy")),
            "load_1m": [load_before, os.getloadavg()[0]],
        }  # fmt: skip
        args.out.write_text(json.dumps(document, indent=1) + "\n")


if __name__ == "__main__":
    main()
