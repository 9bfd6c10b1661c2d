"""Multi-GPU: scenarios/multi_gpu.yaml (NCCL all-reduce, all-gather and reduce-scatter between the
ranks of 2 GPUs, one worker process per GPU) through `launchbench run`; every argument after the
script's name goes to `run` (e.g. `-d results/multigpu`). On fewer than 2 GPUs `run` refuses with
exit 2, and so does this script.

    python benchmarks/multigpu_allreduce.py -d results/multigpu
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCENARIO = Path(__file__).parent.parent / "scenarios" / "multi_gpu.yaml"


def command(argv: list[str]) -> list[str]:
    return [sys.executable, "-m", "launchbench", "run", str(SCENARIO), *argv]


if __name__ == "__main__":
    raise SystemExit(subprocess.call(command(sys.argv[1:])))
