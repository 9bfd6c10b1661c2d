"""launchbench floor on the GPU: each layer measured in a fresh process of its own (by default), or the
CuPy layers together in the command's process and torch's apart (processes: shared), every layer's rows
in the run."""

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


def _floor(tmp_path: Path, name: str, *options: str) -> tuple[Path, int]:
    """``launchbench floor OPTIONS`` run in a process of its own: its run directory and its pid."""
    run = tmp_path / name
    command = [sys.executable, "-m", "launchbench", "floor", *options]
    command += ["--max-time", "2", "-q", "-d", str(run)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, env=env) as done:
        _, stderr = done.communicate(timeout=300)
    assert done.returncode == 0, stderr[-2000:]
    return run, done.pid


@pytest.mark.gpu
def test_floor_measures_each_layer_in_a_process_of_its_own(tmp_path: Path) -> None:
    """By default every layer's cases share one fresh process, none the command's own; torch's too."""
    has_torch = importlib.util.find_spec("torch") is not None
    layers = ["cupy_raw", "gpu", *(["torch"] if has_torch else [])]
    run, command_pid = _floor(tmp_path, "floor", *(arg for layer in layers for arg in ("--layer", layer)))
    record = load_run(run)
    assert [c.case_id for c in record.cases] == [
        "cupy_raw/args=0",
        "cupy_raw/args=4",
        "cupy_raw/args=16",
        *(["torch"] if has_torch else []),
        "gpu",
    ]
    cupy_pids = set().union(*(_pids(record, f"cupy_raw/args={n}") for n in (0, 4, 16)))
    pids = [cupy_pids, _pids(record, "gpu"), *([_pids(record, "torch")] if has_torch else [])]
    assert all(len(one) == 1 for one in pids) and len(set().union(*pids)) == len(pids)
    assert command_pid not in set().union(*pids)
    with (run / "results.csv").open() as table:  # the gpu layer's eager row is skipped: no wall figure
        rows = {(r["case"], r["mode"]): r["wall_us_per_launch"] for r in csv.DictReader(table)}
    assert rows[("gpu", "eager")] == "" and float(rows[("gpu", "graph")]) > 0, rows
    for mode in ("eager", "graph"):  # a launch and a replay: microseconds
        assert 0.5 < float(rows[("cupy_raw/args=0", mode)]) < 100.0, rows
        if has_torch:
            assert 0.5 < float(rows[("torch", mode)]) < 100.0, rows


@pytest.mark.gpu
def test_floor_shares_the_command_s_process_among_the_cupy_layers_when_asked(tmp_path: Path) -> None:
    """processes: shared measures every layer but torch in the command's own process, torch apart."""
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    options = ("--processes", "shared", "--layer", "cupy_raw", "--layer", "gpu", "--layer", "torch")
    run, command_pid = _floor(tmp_path, "shared", *options)
    record = load_run(run)
    shared = set().union(*(_pids(record, f"cupy_raw/args={n}") for n in (0, 4, 16)), _pids(record, "gpu"))
    assert shared == {command_pid} and _pids(record, "torch") - {command_pid} == _pids(record, "torch")
    torch_case = record.case("floor", "torch")
    assert torch_case is not None and {m.status for m in torch_case.modes.values()} <= {"ok", "budget"}
