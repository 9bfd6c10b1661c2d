"""launchbench ab on a scenario with a floor: block, on the GPU: both sides (the same interpreter) measure
the layers in a floor process of their own each round, and the floor rows are compared round by round."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 2
LAYERS = ("c/args=0", "bindings/args=0", "cupy_raw/args=0")
SCENARIO = """
name: abfloor
description: a small floor for ab on the GPU
chain:
  - kind: empty
floor:
  layers: [c, bindings, cupy_raw]
  args: [0]
  gpu_nodes: 10
  max_time: 1.5
"""


@pytest.mark.gpu
def test_ab_measures_a_floor_block_paired_on_the_gpu(tmp_path: Path) -> None:
    scenario = tmp_path / "abfloor.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "ab"
    command = [sys.executable, "-m", "launchbench", "ab", str(scenario), "--passes", str(ROUNDS)]
    command += ["--max-time", "0.2", "--out", str(out), "--format", "json", "-o", str(tmp_path / "ab.json")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    sides = [load_run(out / side) for side in ("a", "b")]
    for record in sides:
        assert record.status == "complete"
        assert [c.case_id for c in record.cases if c.kinds == "floor"] == list(LAYERS)
    lines = json.loads((tmp_path / "ab.json").read_text())["rows"]  # one per row and metric
    for case_id in LAYERS:
        a, b = (record.case("abfloor", case_id) for record in sides)
        assert a is not None and b is not None and not a.error and not b.error
        assert a.passes_done == b.passes_done == ROUNDS
        if a.modes["eager"].status == "skipped":  # c without a C compiler: skipped alike on both sides
            assert b.modes["eager"].status == "skipped" and a.modes["eager"].reason == b.modes["eager"].reason
            continue
        for record in (a, b):
            passes = record.modes["eager"].passes
            assert len(passes) == ROUNDS and len({p.host.pid for p in passes}) == ROUNDS  # a process a round
        eager = [line for line in lines if (line["case"], line["mode"]) == (case_id, "eager")]
        assert eager and all(line["verdict"] not in ("missing", "failed") for line in eager)
