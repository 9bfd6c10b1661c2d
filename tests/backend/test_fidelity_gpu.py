"""The short fidelity check on the GPU: `launchbench run` against benchmarks/bare_loop.py in a process of
its own (imports CuPy, nothing of launchbench), taking turns, so a harness side effect that slows every
graph replay of a worker (as an uploaded graph exec destroyed unlaunched does) fails a test. Run the GPU
tests one at a time (no pytest-xdist): another process using the GPU meanwhile moves the canary too."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.results.store import load_run

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parents[2]
BOUND = 0.05  # GPU-bound graph rows: a fresh process and launchbench agree within 1% on the H200
SCENARIO = """\
name: fidelity_short
description: Empty kernels in chains of 1, 100 and 1000, measured in one pass of several cases.
sweep:
  length: [1, 100, 1000]
chains:
  empty:
    - {kind: empty, repeat: $length}
"""


def _bare(specs: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bare_loop.py"), *specs],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    rows = [json.loads(line) for line in done.stdout.splitlines() if line]
    return {row["case"]: row["median_s"] for row in rows if row["mode"] == "graph"}


def test_graph_rows_of_a_multi_case_run_match_a_bare_loop_in_its_own_process(tmp_path):
    scenario = tmp_path / "fidelity_short.yaml"
    scenario.write_text(SCENARIO)
    specs = ["empty:1", "empty:100", "empty:1000"]
    before = _bare(specs)
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "launchbench", "run", str(scenario), "-d", str(run_dir), "-q",
         "--passes", "2", "--max-time", "1"],
        timeout=600, cwd=ROOT,
    )  # fmt: skip
    after = _bare(specs)
    record = load_run(run_dir)
    for case in record.cases:
        if case.launches_per_iter < 100:
            continue  # host-bound rows: the launch path, not the GPU, sets them
        ours = statistics.median(case.samples("graph", "wall_s_per_iter")) / case.launches_per_iter
        bare = statistics.median([before[case.case_id], after[case.case_id]])
        assert ours / bare == pytest.approx(1.0, abs=BOUND), (case.case_id, ours, bare)
    assert sum(case.disturbed_passes for case in record.cases) == 0 and done.returncode == 0
