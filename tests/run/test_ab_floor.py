"""launchbench ab on a scenario with a floor: block, on the CPU: both sides measure the block's layers in a
floor process of their own in every round, after the round's cases and in alternating order; the floor
rows go through the paired rounds and the gate; a layer one side cannot run is skipped there with its
reason; variants whose blocks differ are refused in one line."""

from __future__ import annotations

import functools
import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import ORDER_FILE_VARIABLE, SIDE_VARIABLE, recording_backend
from floor_fakes import (
    FLOOR_FAIL_VARIABLE,
    FLOOR_SKIP_VARIABLE,
    FLOOR_SLOWDOWN_VARIABLE,
    SKIP_REASON,
    scripted_floor,
)

from launchbench.analysis.compare import CompareSettings, compare_paired, compare_runs
from launchbench.analysis.gate import ComparedRuns, GatePolicy, gate, parse_rule
from launchbench.cli import cli
from launchbench.errors import LaunchbenchError
from launchbench.report.run_files import write_tables
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run
from launchbench.run import runner
from launchbench.run.ab import Side, floor_schedule, parse_variant, run_ab
from launchbench.run.ab_floor import paired_floors

TESTS = Path(__file__).parents[1]
ROUNDS = 3
SCENARIO = f"""
name: fl
description: one chain and a floor block for ab
chain:
  - kind: empty
measure: {{max_time: 0.1, passes: {ROUNDS}, min_samples: 5, warmup_time: 0.01}}
floor:
  layers: [c, bindings, torch]
  args: [0, 4]
  max_time: 0.6
"""
FLOOR_IDS = ["c/args=0", "c/args=4", "bindings/args=0", "bindings/args=4", "torch"]
METRIC = "wall_us_per_launch"


@dataclass(frozen=True)
class AbRun:
    a: RunRecord
    b: RunRecord
    order: list[str]
    out: Path


def _scenario(folder: Path, text: str = SCENARIO, name: str = "fl.yaml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def ab_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AbRun]:
    """One ab of the scenario: B's floor layers 10% slower and its torch layer skipped; the host's level
    changes from round to round (floor_fakes.ROUND_LEVELS), the same for both sides in a round."""
    folder = tmp_path_factory.mktemp("ab_floor")
    order = folder / "order.txt"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ORDER_FILE_VARIABLE, str(order))
        patch.setenv("PYTHONPATH", str(TESTS))  # the workers import the scripted backend and floor
        plan = runner.plan([_scenario(folder)])
        b_env = f"env={SIDE_VARIABLE}=B,env={FLOOR_SLOWDOWN_VARIABLE}=0.10,env={FLOOR_SKIP_VARIABLE}=torch"
        sides = (
            Side("A", parse_variant(f"env={SIDE_VARIABLE}=A"), plan, folder / "out" / "a"),
            Side("B", parse_variant(b_env), plan, folder / "out" / "b"),
        )
        options = runner.RunOptions(
            backend_factory=recording_backend, write_tables=write_tables, floor=scripted_floor
        )
        a, b = run_ab(sides, options)
    yield AbRun(a, b, order.read_text().splitlines(), folder / "out")


def test_each_round_measures_the_floor_on_both_sides_after_its_cases_in_alternating_order(
    ab_run: AbRun,
) -> None:
    floor = "floor fl max_time=0.2"  # the block's 0.6 s shared among the 3 rounds
    expected = []
    for k in range(ROUNDS):
        first, second = ("A", "B") if k % 2 == 0 else ("B", "A")
        expected += [f"{first} chain", f"{second} chain", f"{first} {floor}", f"{second} {floor}"]
    assert ab_run.order == expected


def test_floor_schedule_alternates_over_blocks_and_rounds(tmp_path: Path) -> None:
    plan = runner.plan(
        [_scenario(tmp_path), _scenario(tmp_path, SCENARIO.replace("name: fl", "name: f2"), "f2.yaml")]
    )
    floors = paired_floors(plan, plan, plan_overrides(), 0)
    assert floor_schedule(floors, 0) == [(0, 0), (0, 1), (1, 1), (1, 0)]
    assert floor_schedule(floors, 1) == [(0, 1), (0, 0), (1, 0), (1, 1)]
    assert floor_schedule(floors, ROUNDS) == []  # past the block's rounds


def plan_overrides():  # the plan's own settings: no command-line overrides
    from launchbench.results.metadata import Overrides

    return Overrides()


def test_each_side_records_a_case_per_layer_with_one_pass_per_round(ab_run: AbRun) -> None:
    for record, side in ((ab_run.a, "a"), (ab_run.b, "b")):
        assert record.status == "complete" and load_run(ab_run.out / side) == record
        floor = [c for c in record.cases if c.kinds == "floor"]
        assert [c.case_id for c in floor] == FLOOR_IDS
        for case in floor:
            assert case.passes_done == ROUNDS and not case.error
            if case.modes["eager"].status != "skipped":
                assert len(case.modes["eager"].passes) == ROUNDS  # a pass per round's process
                pids = {p.host.pid for p in case.modes["eager"].passes}
                assert len(pids) == ROUNDS  # a fresh process every round
    csv = (ab_run.out / "b" / "results.csv").read_text()
    assert "bindings/args=4" in csv


def test_pairing_cancels_the_round_drift_on_the_floor_rows(ab_run: AbRun) -> None:
    """The host's level moves 35% between rounds, alike on both sides of a round: the paired ratio of
    B's 10% slower layers is 1.10 within its tight interval, where separate runs cannot tell."""
    settings = CompareSettings(metrics=(METRIC,))
    paired = compare_paired(ab_run.a, ab_run.b, settings)
    separate = compare_runs(ab_run.a, ab_run.b, settings)
    rows = [r for r in paired.rows if r.case in FLOOR_IDS[:4]]
    assert paired.paired and len(rows) == 8
    for row in rows:
        metric = row.metric(METRIC)
        assert metric is not None and metric.verdict == "slower"
        assert metric.ratio == pytest.approx(1.10, rel=0.01)
    apart = [r.metric(METRIC) for r in separate.rows if r.case in FLOOR_IDS[:4]]
    assert all(m is not None and m.verdict != "slower" for m in apart)


def test_a_layer_one_side_cannot_run_is_skipped_with_its_reason_never_compared(ab_run: AbRun) -> None:
    torch_b = ab_run.b.case("fl", "torch")
    assert torch_b is not None
    assert {m.status for m in torch_b.modes.values()} == {"skipped"}
    assert all(m.reason == f"torch: {SKIP_REASON}" for m in torch_b.modes.values())
    torch_a = ab_run.a.case("fl", "torch")
    assert torch_a is not None and torch_a.modes["eager"].status in ("ok", "budget")
    comparison = compare_paired(ab_run.a, ab_run.b, CompareSettings(metrics=(METRIC,)))
    (row, _graph) = [r for r in comparison.rows if r.case == "torch"]
    metric = row.metric(METRIC)
    assert metric is not None and metric.verdict == "failed" and not metric.compared
    assert math.isnan(metric.ratio) if metric.ratio is not None else True
    assert SKIP_REASON in row.detail and row.current_status == "skipped"


def test_the_gate_fails_on_slower_floor_rows_and_on_the_layer_b_lost(ab_run: AbRun) -> None:
    comparison = compare_paired(ab_run.a, ab_run.b, CompareSettings(metrics=(METRIC,)))
    policy = GatePolicy((parse_rule(f"{METRIC}:5%"),), "all")
    report = gate(ComparedRuns(comparison, ab_run.a, ab_run.b), policy)
    failing = {(c.case, c.kind) for c in report.checks if not c.passed}
    assert not report.passed
    assert {case for case, kind in failing if kind == "regression"} == set(FLOOR_IDS[:4])
    assert ("torch", "missing") in failing  # ok in A, skipped in B: --allow-missing allows it


def _invoke(args: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setattr(
        runner,
        "RunOptions",
        functools.partial(runner.RunOptions, backend_factory=recording_backend, floor=scripted_floor),
    )
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(tmp_path / "order.txt"))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    return CliRunner().invoke(cli, ["ab", *args])


def test_ab_command_gates_the_floor_rows_and_compare_reads_both_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: B's floor 30% slower (its chain as fast as A's), two rounds; the floor rows fail the
    gate (exit 1, JUnit), and compare pairs the two sides of the directory as ab did."""
    out = tmp_path / "ab"
    gate_args = ["--fail-on", f"{METRIC}:5%", "--gate-rows", "all"]
    result = _invoke(
        [
            str(_scenario(tmp_path)),
            "--b",
            f"env={FLOOR_SLOWDOWN_VARIABLE}=0.3",
            "--passes",
            "2",
            "-d",
            str(out),
        ]
        + [*gate_args, "--junit", str(tmp_path / "junit.xml"), "-q"],
        monkeypatch,
        tmp_path,
    )
    assert result.exit_code == 1, result.output
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    failed = {case.get("name") for case in cases if case.find("failure") is not None}
    assert failed == {f"{i} [{mode}] {METRIC}" for i in FLOOR_IDS for mode in ("eager", "graph")}
    assert all(load_run(out / s).case("fl", "c/args=0").passes_done == 2 for s in "ab")  # type: ignore[union-attr]
    compared = CliRunner().invoke(
        cli, ["compare", str(out / "a"), str(out / "b"), *gate_args, "--format", "json"]
    )
    assert compared.exit_code == 1, compared.output
    data = json.loads(compared.stdout)
    assert data["settings"]["paired"] is True
    assert {r["case"] for r in data["rows"]} == {"chain", *FLOOR_IDS}


def test_a_floor_process_that_fails_fails_that_sides_floor_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "ab"
    result = _invoke(
        [str(_scenario(tmp_path)), "--b", f"env={FLOOR_FAIL_VARIABLE}=1", "--passes", "2", "-d", str(out)],
        monkeypatch,
        tmp_path,
    )
    assert result.exit_code == 1, result.output  # a failed case fails ab
    b = load_run(out / "b")
    failed = [c for c in b.cases if c.kinds == "floor"]
    assert [c.case_id for c in failed] == FLOOR_IDS
    assert all(c.passes_done == 1 and "a scripted floor failure" in (c.error or "") for c in failed)
    assert all(c.passes_done == 2 and not c.error for c in load_run(out / "a").cases)
    order = (tmp_path / "order.txt").read_text().splitlines()
    assert [line for line in order if " floor " in line] == ["? floor fl max_time=0.3"] * 2  # A's only


def test_ab_refuses_variants_whose_floor_blocks_differ_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = _scenario(tmp_path, SCENARIO.replace("[c, bindings, torch]", "[c, torch]"), "other.yaml")
    out = tmp_path / "ab"
    result = _invoke(
        [str(_scenario(tmp_path)), "--b", f"scenario={other}", "-d", str(out)], monkeypatch, tmp_path
    )
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    said = f"{other}: reading the scenario: ab's variants must hold the same floor cases; only A has"
    assert f"{said} fl/bindings/args=0 (A's floor: c/args=0" in result.output
    assert not out.exists()


def test_a_floor_block_only_one_side_has_is_refused_naming_its_file(tmp_path: Path) -> None:
    with_block = runner.plan([_scenario(tmp_path)])
    bare = SCENARIO.split("floor:")[0]
    (tmp_path / "bare").mkdir()
    without = runner.plan([_scenario(tmp_path / "bare", bare)])
    with pytest.raises(LaunchbenchError, match=r"fl\.yaml: reading the scenario: .* only B's fl has a floor"):
        paired_floors(without, with_block, plan_overrides(), 0)
    with pytest.raises(LaunchbenchError, match=r"only A has fl/bindings/args=0 .* B's: none\)"):
        paired_floors(with_block, without, plan_overrides(), 0)
