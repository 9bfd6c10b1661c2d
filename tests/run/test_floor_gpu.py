"""launchbench floor on the GPU: the CuPy layers measured together in the command's process, torch's in a
fresh process of its own, every layer's rows in the run."""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.results.store import load_run

ROOT = Path(__file__).resolve().parents[2]


def _pids(record, case_id: str) -> set[int | None]:
    case = record.case("floor", case_id)
    assert case is not None and not case.error, case
    return {p.host.pid for mode in case.modes.values() if mode.status != "skipped" for p in mode.passes}


@pytest.mark.gpu
def test_floor_measures_torch_in_a_process_of_its_own(tmp_path: Path) -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    run = tmp_path / "floor"
    command = [sys.executable, "-m", "launchbench", "floor", "--layer", "cupy_raw", "--layer", "torch"]
    command += ["--max-time", "2", "-q", "-d", str(run)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    record = load_run(run)
    assert [c.case_id for c in record.cases] == [
        "cupy_raw/args=0",
        "cupy_raw/args=4",
        "cupy_raw/args=16",
        "torch",
    ]
    torch_case = record.case("floor", "torch")
    assert torch_case is not None and {m.status for m in torch_case.modes.values()} <= {"ok", "budget"}
    cupy_pids = set().union(*(_pids(record, f"cupy_raw/args={n}") for n in (0, 4, 16)))
    torch_pids = _pids(record, "torch")
    assert len(cupy_pids) == 1 and len(torch_pids) == 1 and cupy_pids != torch_pids
    with (run / "results.csv").open() as table:
        rows = {(r["case"], r["mode"]): float(r["wall_us_per_launch"]) for r in csv.DictReader(table)}
    for mode in ("eager", "graph"):
        assert 0.5 < rows[("torch", mode)] < 100.0, rows  # a torch launch and a replay: microseconds
