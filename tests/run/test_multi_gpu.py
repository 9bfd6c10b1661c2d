"""Cases on several GPUs, without a GPU: the scenario and its bad inputs, the collectives' host results,
the ranks kept in step (threads, then real worker processes of the scripted backend), merging the
ranks' results, and the refusals when too few GPUs are visible."""

from __future__ import annotations

import functools
import queue
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from fakes import DEVICES_VARIABLE, ScriptedWorkload, SteppingClock, scripted_backend
from pydantic import TypeAdapter

from launchbench.cli import cli
from launchbench.errors import LaunchbenchError
from launchbench.kinds.collective import expected, rank_input
from launchbench.measure.sampler import Sampler
from launchbench.results.schema import WALL, CaseResult, ModePass, ModeResult
from launchbench.run import runner
from launchbench.run.ranks import LeaderWorkload, RankLog, follow, merge_ranks
from launchbench.scenario.core import Case, MeasureSettings
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import Step

ROOT = Path(__file__).parents[2]
SCENARIO = ROOT / "scenarios" / "multi_gpu.yaml"
STEP = TypeAdapter(Step)


def _write(tmp_path: Path, **fields) -> Path:
    data = {
        "name": "mg",
        "description": "x",
        "devices": 2,
        "chains": {"c": [{"kind": "all_reduce", "size": 8}]},
    }
    data.update(fields)
    path = tmp_path / "mg.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_multi_gpu_scenario_runs_every_case_on_two_gpus():
    cases = expand_scenario(SCENARIO)
    assert len(cases) == 9 and {c.devices for c in cases} == {2}
    kinds = {c.chain: c.kinds for c in cases}
    assert kinds == {
        "allreduce": "scale+all_reduce",
        "allgather": "all_gather",
        "reducescatter": "reduce_scatter",
    }
    result = CliRunner().invoke(cli, ["validate", str(SCENARIO)])
    assert result.exit_code == 0 and "each on 2 GPUs" in result.output


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"devices": 1}, r"chains\.c\[0\].*the all_reduce step pairs the ranks of several GPUs"),
        ({"devices": 0}, r"devices.*greater than or equal to 1"),
        ({"devices": 17}, r"devices.*less than or equal to 16"),
        ({"devices": "two"}, r"devices.*expected a number"),
        ({"chains": {"c": [{"kind": "broadcast", "size": 4, "root": 2}]}}, r"c\[0\]\.root.*not a rank"),
        ({"chains": {"c": [{"kind": "all_gather", "size": 0}]}}, r"c\[0\]\.size"),
        ({"chains": {"c": [{"kind": "reduce_scatter", "size": 4, "op": "avg"}]}}, r"c\[0\]\.op"),
    ],
)
def test_bad_multi_gpu_scenarios_are_refused_with_the_key(tmp_path, fields, message):
    with pytest.raises(LaunchbenchError, match=message):
        expand_scenario(_write(tmp_path, **fields))
    result = CliRunner().invoke(cli, ["validate", str(tmp_path / "mg.yaml")])
    assert result.exit_code == 2 and result.output.count("\n") == 1


def test_collectives_have_their_result_computed_on_the_host():
    def step(kind, **fields):
        return STEP.validate_python({"kind": kind, "size": 4, **fields})

    world = 3
    inputs = [rank_input(step("all_reduce"), "p", r, world) for r in range(world)]
    assert all(np.array_equal(a, np.round(a)) and a.max() < 16 for a in inputs)  # exact sums in any order
    assert np.array_equal(expected(step("all_reduce"), "p", 1, world), sum(inputs))
    high = [rank_input(step("all_reduce", op="max"), "p", r, world) for r in range(world)]
    assert np.array_equal(expected(step("all_reduce", op="max"), "p", 0, world), np.maximum.reduce(high))
    gathered = expected(step("all_gather"), "p", 2, world)
    assert np.array_equal(
        gathered, np.concatenate([rank_input(step("all_gather"), "p", r, world) for r in range(world)])
    )
    scatter = [rank_input(step("reduce_scatter"), "p", r, world) for r in range(world)]
    assert len(scatter[0]) == 12
    assert np.array_equal(expected(step("reduce_scatter"), "p", 1, world), sum(scatter)[4:8])
    root = rank_input(step("broadcast", root=2), "p", 2, world)
    assert np.array_equal(expected(step("broadcast", root=2), "p", 0, world), root)
    assert not np.array_equal(
        rank_input(step("all_reduce"), "p", 0, world), rank_input(step("all_reduce"), "q", 0, world)
    )


class QueueControl:
    """RankControl for ranks in threads of one process."""

    def __init__(self, world: int):
        self.barrier = threading.Barrier(world)
        self.boxes = [queue.Queue() for _ in range(world)]
        self.flags: list[list[int]] = []

    def for_rank(self, rank):
        control = self

        class One:
            def exchange(self, command):
                if rank == 0:
                    for box in control.boxes[1:]:
                        box.put(command)
                    control.barrier.wait()
                    return command
                command = control.boxes[rank].get(timeout=30)
                control.barrier.wait()
                return command

            def common(self, flags):
                control.flags.append(flags)
                control.barrier.wait()
                return [min(values) for values in zip(*control.flags)]

        return One()


def test_the_ranks_run_the_same_batches_and_know_their_samples():
    settings = MeasureSettings(max_time=0.05, min_samples=5, warmup_time=0.001)
    control = QueueControl(2)
    logs = [RankLog(), RankLog()]
    clocks = [SteppingClock(), SteppingClock()]
    workloads = [
        [
            ScriptedWorkload(clocks[r], 4, 20e-6 * (1 + r), 0.02, seed=r),
            ScriptedWorkload(clocks[r], 4, 4e-6, 0.01, seed=9),
        ]
        for r in range(2)
    ]
    follower = threading.Thread(target=follow, args=(workloads[1], control.for_rank(1), logs[1]))
    follower.start()
    lead = control.for_rank(0)
    wrapped = {
        m: LeaderWorkload(w, i, lead, logs[0])
        for i, (m, w) in enumerate(zip(("eager", "graph"), workloads[0]))
    }
    outcome = Sampler(settings, clocks[0]).run(wrapped)
    lead.exchange((3, 0, 0))
    follower.join(30)
    assert not follower.is_alive()
    for mode, index in (("eager", 0), ("graph", 1)):
        assert [b for b in workloads[0][index].batches] == workloads[1][index].batches  # the same batches
        iters, mine = logs[0].samples(index)
        _, theirs = logs[1].samples(index)
        assert mine[WALL] == outcome.modes[mode].wall  # rank 0's log is what the sampler took
        assert len(theirs[WALL]) == len(mine[WALL]) and iters == outcome.modes[mode].iters_per_sample
    assert np.median(logs[1].samples(0)[1][WALL]) > 1.5 * np.median(logs[0].samples(0)[1][WALL])


def _rank_result(rank: int, walls: list[float], match=True) -> CaseResult:
    one = ModePass(iters_per_sample=10, samples={WALL: walls, "latency_s": [w * 2 for w in walls]})
    return CaseResult(
        scenario="s",
        case_id="c",
        chain="c",
        kinds="all_reduce",
        launches_per_iter=1,
        modes={"eager": ModeResult(mode="eager", status="ok", passes=[one])},
        outputs_match=match,
        check_detail=f"rank {rank} detail",
    )


def test_merging_the_ranks_keeps_each_and_takes_the_slowest_per_sample():
    case = Case("s", "c", "c", {}, (), MeasureSettings(), devices=2)
    merged = merge_ranks(case, [_rank_result(0, [1.0, 5.0, 2.0]), _rank_result(1, [2.0, 3.0, 2.5])], [0, 1])
    one = merged.modes["eager"].passes[0]
    assert one.samples[WALL] == [2.0, 5.0, 2.5] and one.samples["latency_s"] == [4.0, 10.0, 5.0]
    assert [(r.rank, r.device, r.samples[WALL]) for r in one.ranks] == [
        (0, 0, [1.0, 5.0, 2.0]),
        (1, 1, [2.0, 3.0, 2.5]),
    ]
    assert (
        merged.outputs_match is True and merged.check_detail == "rank 0: rank 0 detail; rank 1: rank 1 detail"
    )
    mismatch = merge_ranks(case, [_rank_result(0, [1.0]), _rank_result(1, [1.0], match=False)], [0, 1])
    assert mismatch.outputs_match is False
    with pytest.raises(LaunchbenchError, match="different numbers of samples"):
        merge_ranks(case, [_rank_result(0, [1.0, 2.0]), _rank_result(1, [1.0])], [0, 1])


def _options(**fields):
    return runner.RunOptions(backend_factory=scripted_backend, **fields)


def _plan(tmp_path: Path, devices: int = 2):
    path = tmp_path / "mg.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "mg",
                "description": "x",
                "devices": devices,
                "measure": {"max_time": 0.2, "passes": 2, "min_samples": 3, "warmup_time": 0.001},
                "chains": {
                    "step": [{"kind": "scale", "size": 8}, {"kind": "all_reduce", "size": 8, "repeat": 4}]
                },
            }
        )
    )
    return runner.plan([path])


def test_a_case_on_two_gpus_runs_one_worker_per_rank_in_step(tmp_path, monkeypatch):
    from launchbench.analysis.table import run_table

    monkeypatch.setenv(DEVICES_VARIABLE, "2")
    record = runner.run(_plan(tmp_path), tmp_path / "run", _options())
    case = record.cases[0]
    assert case.error is None, case.error
    assert case.passes_done == 2 and case.outputs_match is True
    for mode in ("eager", "graph"):
        for one in case.modes[mode].passes:
            assert [r.rank for r in one.ranks] == [0, 1] and [r.device for r in one.ranks] == [0, 1]
            slowest = np.maximum(one.ranks[0].samples[WALL], one.ranks[1].samples[WALL])
            assert one.samples[WALL] == list(slowest)
            assert np.median(one.ranks[1].samples[WALL]) > np.median(
                one.ranks[0].samples[WALL]
            )  # rank 1 is slower
    table = run_table(record)
    assert set(table["devices"]) == {2}
    assert all(len(str(v).split(";")) == 2 for v in table["rank_wall_us_per_iter"])


def test_too_few_gpus_is_refused_before_anything_is_created(tmp_path, monkeypatch):
    monkeypatch.setenv(DEVICES_VARIABLE, "1")
    with pytest.raises(
        runner.TooFewDevices, match=r"mg.yaml: needs 2 GPUs \(devices: 2\); 1 visible to CUDA"
    ):
        runner.run(_plan(tmp_path), tmp_path / "run", _options())
    assert not (tmp_path / "run").exists()
    monkeypatch.setenv(DEVICES_VARIABLE, "2")
    with pytest.raises(runner.TooFewDevices, match="1 visible to CUDA from --device 1"):
        runner.run(_plan(tmp_path), tmp_path / "run", _options(device=1))
    with pytest.raises(LaunchbenchError, match="drop --no-isolate"):
        runner.run(_plan(tmp_path), tmp_path / "run", _options(isolate=False))


def test_run_refuses_too_few_gpus_with_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv(DEVICES_VARIABLE, "1")
    monkeypatch.setattr(
        runner, "RunOptions", functools.partial(runner.RunOptions, backend_factory=scripted_backend)
    )
    _plan(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(tmp_path / "mg.yaml"), "-d", str(tmp_path / "run"), "-q"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        f"launchbench: error: {tmp_path / 'mg.yaml'}: needs 2 GPUs (devices: 2); 1 visible to CUDA"
    ]


def test_the_multigpu_benchmark_is_a_call_of_run():
    import importlib
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        script = importlib.import_module("multigpu_allreduce")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    assert script.command(["-d", "out"])[1:] == ["-m", "launchbench", "run", str(SCENARIO), "-d", "out"]


def test_graph_draws_one_gpu_cases_only(tmp_path):
    result = CliRunner().invoke(cli, ["graph", str(SCENARIO), "-o", str(tmp_path / "g.dot")])
    assert result.exit_code == 2 and "runs on 2 GPUs" in result.output


def test_rank_commands_travel_as_three_integers_and_an_unknown_one_is_refused():
    from launchbench.run.protocol import RankCommand, RankVerb

    command = RankCommand(RankVerb.BATCH, 1, 4096)
    assert command.wire() == (1, 1, 4096) and RankCommand.from_wire(command.wire()) == command
    assert RankCommand.from_wire((3, 0, 0)).verb is RankVerb.STOP
    with pytest.raises(LaunchbenchError, match="rank control: unknown command 7"):
        RankCommand.from_wire((7, 0, 0))
