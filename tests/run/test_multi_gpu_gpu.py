"""GPU tests of the multi-GPU machinery that one GPU can run: a single-rank NCCL communicator drives the
collectives (each captured into the rank's graph), the NCCL control channel and the rank workers'
protocol; and `run` refuses a 2-GPU scenario on one GPU. The 2-rank path itself needs two GPUs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import TypeAdapter

from launchbench.scenario.core import Case, MeasureSettings
from launchbench.scenario.model import Step

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parents[2]
STEP = TypeAdapter(Step)
STEPS = [
    {"kind": "scale", "size": 1000},
    {"kind": "all_reduce", "size": 4096, "repeat": 3},
    {"kind": "all_gather", "size": 1000, "dtype": "float64"},
    {"kind": "reduce_scatter", "size": 512, "op": "max", "dtype": "int32"},
    {"kind": "broadcast", "size": 100},
]


def _case(devices: int = 1) -> Case:
    steps = tuple(STEP.validate_python(s) for s in STEPS)
    measure = MeasureSettings(max_time=0.3, min_samples=3, warmup_time=0.01, passes=1)
    return Case("s", "collectives", "collectives", {}, steps, measure, devices=devices)


def _nccl():
    try:
        from cupy.cuda import nccl

        nccl.get_version()
    except Exception as err:  # noqa: BLE001
        pytest.skip(f"CuPy has no NCCL: {err}")


def test_one_rank_runs_collectives_eagerly_and_from_its_graph(backend):
    from launchbench.backend.base import RankInfo
    from launchbench.run.ranks import execute_rank

    _nccl()
    ranks = RankInfo(0, 1, backend.nccl_unique_id())
    result = execute_rank(backend, _case(), backend.clock, ranks)
    assert result.error is None, result.error
    assert result.outputs_match is True and "host reference" in result.check_detail, result.check_detail
    graph = result.modes["graph"]
    assert graph.status in ("ok", "budget"), graph.reason
    assert len(graph.passes[0].samples["wall_s_per_iter"]) >= 3


def test_a_rank_worker_takes_its_task_and_the_parent_merges(tmp_path):
    from launchbench.run.executor import WorkerProcess
    from launchbench.run.ranks import RankGroup
    from launchbench.run.worker import cupy_backend

    _nccl()
    group = RankGroup(lambda device: WorkerProcess(cupy_backend, device), 0)
    result = group.execute(_case(devices=1), lambda _f: None, timeout=240)
    assert result.error is None, result.error
    one = result.modes["eager"].passes[0]
    assert [r.rank for r in one.ranks] == [0] and one.samples["wall_s_per_iter"] == one.ranks[0].samples[
        "wall_s_per_iter"
    ]


def test_run_refuses_the_two_gpu_scenario_on_one_gpu(tmp_path):
    import cupy

    if cupy.cuda.runtime.getDeviceCount() >= 2:
        pytest.skip("this machine has 2 or more GPUs")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchbench",
            "run",
            str(ROOT / "scenarios" / "multi_gpu.yaml"),
            "-d",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"launchbench: error: {ROOT / 'scenarios' / 'multi_gpu.yaml'}: needs 2 GPUs (devices: 2); 1 visible to CUDA"
    ]
    assert not (tmp_path / "r").exists()
