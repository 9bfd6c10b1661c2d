"""A floor layer measured in a fresh Python process of its own: ``python -m launchbench.run.floor_process
TASK ANSWER`` reads the pickled ``ApartTask`` at TASK, measures its cases in this process (timed by the
system clock) and writes their pickled results to ANSWER. Started by run.floor.measure_apart; never
prints."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from launchbench.measure.clock import SystemClock
from launchbench.run.floor import ApartTask, measure_cases


def main(argv: list[str]) -> int:
    task: ApartTask = pickle.loads(Path(argv[0]).read_bytes())
    results = measure_cases(task.request, task.cases, SystemClock(), task.gpu_address, task.max_time)
    Path(argv[1]).write_bytes(pickle.dumps([results[case] for case in task.cases]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
