"""Chains whose sizes change between iterations (issue 16), on the CPU: the scenario format, the modes a
run measures for them (with the scripted backend of tests/fakes.py), results.json and results.csv, the
cost model over iterations per shape, the figure, the console summary, and compare/check on such runs.
The refusals of single bad files are in tests/scenario/test_bad_inputs.py (tests/data/bad/shapes-*.yaml)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from fakes import SHAPE_CHANGE_COST, ScriptedBackend, ScriptedWorkload, SteppingClock
from matplotlib.figure import Figure

from launchbench.analysis.columns import COLUMNS, FLEET_COLUMNS, SHAPE_COLUMNS, level_columns
from launchbench.analysis.costmodel import ShapeCost, cost_model_table, fit_shape_model, winning_ranges
from launchbench.analysis.table import run_table
from launchbench.cli import cli
from launchbench.errors import ScenarioError
from launchbench.measure.sampler import Sampler
from launchbench.report.console import print_summary
from launchbench.report.plots import panels as fig_panels
from launchbench.report.plots import shapes as fig_shapes
from launchbench.report.plots import style as fig_style
from launchbench.report.plots import write as fig_write
from launchbench.report.terminal import plain_console
from launchbench.results.metadata import Overrides
from launchbench.results.schema import WALL, RunRecord
from launchbench.results.store import load_run, write_run
from launchbench.run import runner
from launchbench.scenario.core import MeasureSettings
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.shape_plan import SHAPE_SEED

ROOT = Path(__file__).resolve().parents[2]
SHAPES = ROOT / "tests" / "data" / "scripted" / "shapes.yaml"
SCENARIO = ROOT / "scenarios" / "shape_changes.yaml"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _run(
    tmp_path: Path, name: str = "run", backend: ScriptedBackend | None = None, passes: int = 2
) -> RunRecord:
    plan = runner.plan([SHAPES], Overrides(passes=passes))
    options = runner.RunOptions(isolate=False, backend_factory=lambda _device: backend or ScriptedBackend())
    return runner.run(plan, tmp_path / name, options)


@pytest.fixture(scope="module")
def shape_run(tmp_path_factory: pytest.TempPathFactory) -> RunRecord:
    return _run(tmp_path_factory.mktemp("shapes"))


# --- the scenario format --------------------------------------------------------------------------------


def test_a_shape_chain_expands_into_one_case_per_sweep_value_with_every_shape_built():
    cases = {case.case_id: case for case in expand_scenario(SHAPES)}
    assert sorted(cases) == sorted(
        [f"{chain}/per_shape={k}" for chain in ("mlp", "refused") for k in (1, 4, 16)] + ["fixed"]
    )
    assert cases["fixed"].shapes is None  # a chain that does not use $batch keeps its sizes
    plan = cases["mlp/per_shape=4"].shapes
    assert plan is not None and plan.param == "batch" and plan.values == (8, 16, 32, 64)
    assert (
        plan.per_shape == 4 and plan.cache_limit == 4 and plan.strategies == ("recapture", "cache", "update")
    )
    assert [[step.size for step in steps] for steps in plan.variants] == [
        [b * 256] * 2 for b in (8, 16, 32, 64)
    ]
    assert plan.launches == (8, 8, 8, 8) and cases["mlp/per_shape=4"].launches_per_iter == 8
    assert cases["mlp/per_shape=4"].steps == plan.variants[0]


def test_steps_that_do_not_use_the_shape_are_built_once_and_shared(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nshapes: {param: n, values: [10, 20, 30], per_shape: 2}\n"
        "chain:\n  - {kind: scale, size: $n}\n  - {kind: scale, size: 77}\n",
    )
    (case,) = expand_scenario(path)
    assert case.shapes is not None
    first, *others = case.shapes.variants
    assert all(steps[1] is first[1] for steps in others)  # one step, one set of buffers
    assert all(steps[0] is not first[0] for steps in others)


def test_shapes_may_use_sweep_axes_and_expressions_and_shuffle_the_same_way_every_run(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nparams: {top: 64}\nsweep:\n  distinct: [4, 8]\n"
        "shapes:\n  param: b\n  values: {start: '${top / distinct}', stop: $top, num: $distinct, scale: linear}\n"
        "  per_shape: 3\n  order: shuffle\n"
        "chains:\n  a: [{kind: scale, size: '${b * 2}'}]\n  plain: [{kind: empty}]\n",
    )
    cases = {case.case_id: case for case in expand_scenario(path)}
    assert sorted(cases) == ["a/distinct=4", "a/distinct=8", "plain"]  # the shapes' axes multiply only `a`
    four = cases["a/distinct=4"].shapes
    assert four is not None and sorted(four.values) == [16, 32, 48, 64] and four.order == "shuffle"
    again = {c.case_id: c for c in expand_scenario(path)}["a/distinct=4"].shapes
    assert again is not None and again.values == four.values  # SHAPE_SEED fixes the permutation
    assert SHAPE_SEED == 1


def test_a_strategy_list_without_update_allows_a_change_in_launches(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nshapes: {param: n, values: [2, 4], per_shape: 1, strategies: [cache]}\n"
        "chain:\n  - {kind: empty, repeat: $n}\n",
    )
    (case,) = expand_scenario(path)
    assert case.shapes is not None and case.shapes.launches == (2, 4) and case.launches_per_iter == 3


def test_a_bad_step_at_one_shape_names_the_shape_and_the_case(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nsweep: {k: [1, 2]}\nshapes: {param: n, values: [4, -4], per_shape: $k}\n"
        "chain:\n  - {kind: scale, size: $n}\n",
    )
    with pytest.raises(ScenarioError) as info:
        expand_scenario(path)
    message = str(info.value)
    assert "chain[0].size" in message and "(at n=-4)" in message and "(in case 'chain/k=1')" in message


def test_the_shape_scenario_in_the_library_validates():
    result = CliRunner().invoke(cli, ["validate", str(SCENARIO)])
    assert result.exit_code == 0, result.output
    cases = expand_scenario(SCENARIO)
    assert len(cases) == 9 and all(case.shapes is not None for case in cases)
    distinct = {case.params["distinct"]: case.shapes.distinct for case in cases if case.shapes}
    assert distinct == {4: 4, 64: 64, 256: 256}
    assert all(case.launches_per_iter == 12 for case in cases)


# --- modes and scheduling ----------------------------------------------------------------------------------


def test_calibration_takes_whole_shapes():
    """A sample of a mode whose shape changes every k iterations holds a whole multiple of k, so every
    sample holds the same number of changes."""
    clock = SteppingClock()
    workload = ScriptedWorkload(clock, 1, 3e-6, iters_multiple=16)
    settings = MeasureSettings(min_samples=5, max_time=0.2, warmup_time=0.0)
    outcome = Sampler(settings, clock).run({"cache": workload})
    iters = outcome.modes["cache"].iters_per_sample
    assert iters % 16 == 0 and iters * 3e-6 >= settings.sample_time


def test_a_shape_case_is_measured_eagerly_and_with_each_strategy(shape_run: RunRecord):
    case = shape_run.case("shapes", "mlp/per_shape=4")
    assert case is not None and set(case.modes) == {"eager", "recapture", "cache", "update"}
    assert case.shapes is not None and case.shapes.per_shape == 4 and case.shapes.launches == [8, 8, 8, 8]
    for mode, result in case.modes.items():
        assert result.status in ("ok", "budget") and len(result.passes) == 2
        assert result.iters_per_sample % 4 == 0, mode
        counts = result.shape_counts
        assert counts is not None and counts.changes > 0
        assert abs(counts.changes - counts.iterations / 4) <= len(
            result.passes
        )  # one change per 4 iterations
    assert case.outputs_match is True
    fixed = shape_run.case("shapes", "fixed")
    assert fixed is not None and set(fixed.modes) == {"eager", "graph"} and fixed.shapes is None


def test_strategies_cost_what_the_scripted_changes_cost(shape_run: RunRecord):
    case = shape_run.case("shapes", "mlp/per_shape=1")
    assert case is not None
    wall = {mode: float(np.median(case.samples(mode, WALL))) for mode in case.modes}
    assert wall["cache"] < wall["update"] < wall["recapture"]  # 0.2 < 3 < 8 µs per launch and change
    for mode in ("recapture", "update"):
        counts = case.modes[mode].shape_counts
        assert counts is not None
        assert counts.setup_s / counts.changes == pytest.approx(SHAPE_CHANGE_COST[mode] * 8)


def test_refused_updates_are_counted_with_their_reason_and_recaptured(shape_run: RunRecord):
    counts = shape_run.case("shapes", "refused/per_shape=1").modes["update"].shape_counts
    assert counts is not None and counts.updates == 0
    assert counts.update_refusals == counts.recaptures == counts.changes > 0
    assert counts.refusal_reasons == {"cudaGraphExecUpdateErrorTopologyChanged": counts.changes}


def test_a_strategy_whose_outputs_differ_fails_alone(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nmeasure: {max_time: 0.2, min_samples: 3, warmup_time: 0.01}\n"
        "shapes: {param: n, values: [10, 20], per_shape: 2}\n"
        "chain:\n  - {kind: scale, size: $n, label: mismatch}\n",
    )
    record = runner.run(
        runner.plan([path]),
        tmp_path / "r",
        runner.RunOptions(isolate=False, backend_factory=lambda d: ScriptedBackend()),
    )
    (case,) = record.cases
    assert case.outputs_match is False and case.error_kind == "mismatch"
    assert case.modes["update"].status == "failed" and "differs" in str(case.modes["update"].reason)
    assert {case.modes[m].status for m in ("eager", "recapture", "cache")} <= {"ok", "budget"}


def test_shape_cases_run_in_worker_processes(tmp_path):
    plan = runner.plan([SHAPES], Overrides(passes=1, max_time=0.1))
    plan = runner.Plan([c for c in plan.cases if c.case_id == "mlp/per_shape=16"], plan.scenarios, plan.files)
    from fakes import scripted_backend

    record = runner.run(
        plan, tmp_path / "w", runner.RunOptions(isolate=True, backend_factory=scripted_backend)
    )
    (case,) = record.cases
    assert case.shapes is not None and set(case.modes) == {"eager", "recapture", "cache", "update"}
    assert load_run(tmp_path / "w").cases[0].modes["cache"].shape_counts is not None


# --- results.csv ----------------------------------------------------------------------------------------------


def test_results_csv_has_the_shape_columns_with_units():
    appended = [*SHAPE_COLUMNS, *level_columns(), *FLEET_COLUMNS]  # appended: older readers keep theirs
    assert list(COLUMNS)[-len(appended) :] == appended
    assert COLUMNS["setup_us_per_change"][0] == "µs" and COLUMNS["iterations_per_shape"][0] == "iterations"
    docs = (ROOT / "docs" / "columns.md").read_text()
    assert all(f"`{column}`" in docs for column in SHAPE_COLUMNS)


def test_results_csv_rows_of_a_shape_run(shape_run: RunRecord, tmp_path: Path):
    from launchbench.report.run_files import write_tables

    write_tables(tmp_path, shape_run)
    table = pd.read_csv(tmp_path / "results.csv")
    rows = table[table["case"] == "refused/per_shape=4"].set_index("mode")
    assert set(rows.index) == {"eager", "recapture", "cache", "update"}
    assert (rows["iterations_per_shape"] == 4).all() and (rows["distinct_shapes"] == 4).all()
    update = rows.loc["update"]
    case = shape_run.case("shapes", "refused/per_shape=4")
    counts = case.modes["update"].shape_counts
    assert update["update_refusals"] == counts.update_refusals and update["graph_updates"] == 0
    assert update["update_refusal_reasons"] == f"cudaGraphExecUpdateErrorTopologyChanged:{counts.changes}"
    assert update["setup_us_per_change"] == pytest.approx(counts.setup_s / counts.changes * 1e6)
    assert update["speedup"] == pytest.approx(
        rows.loc["eager", "wall_us_per_iter"] / update["wall_us_per_iter"], rel=1e-6
    )
    assert pd.isna(rows.loc["eager", "recaptures"]) and rows.loc["recapture", "recaptures"] > 0
    assert rows.loc["cache", "cache_hits"] > 0 and rows.loc["cache", "cache_misses"] == 0
    fixed = table[table["case"] == "fixed"]
    assert fixed["iterations_per_shape"].isna().all() and fixed["shape_changes"].isna().all()
    model = pd.read_csv(tmp_path / "costmodel.csv")
    assert set(model["fit"]) == {"iterations_per_shape"}  # no chain of this run varies its length


# --- the cost model -------------------------------------------------------------------------------------------


def test_a_cost_is_the_slower_of_the_gpu_and_the_host():
    cost = ShapeCost(gpu_bound=20.0, host=4.0, per_change=160.0)
    assert list(cost.at(np.array([1.0, 4.0, 10.0, 16.0, 64.0]))) == [164.0, 44.0, 20.0, 20.0, 20.0]


def test_winning_ranges_follow_the_lower_envelope():
    # eager 50 µs flat; update 10 + 60/k; cache 8 + 200/k (host-paced): update is 2% cheaper than eager
    # above 60/39 = 1.54, cache 2% cheaper than update above 141.2/1.8 = 78.4
    costs = {
        "eager": ShapeCost(0.0, 50.0, 0.0),
        "update": ShapeCost(0.0, 10.0, 60.0),
        "cache": ShapeCost(0.0, 8.0, 200.0),
    }
    ranges = winning_ranges(costs, 64)
    assert ranges["eager"][0] == 1.0 and ranges["eager"][1] == pytest.approx(60 / 39, rel=0.005)
    assert ranges["update"][0] == ranges["eager"][1] and ranges["update"][1] == pytest.approx(78.4, rel=0.005)
    assert ranges["cache"][0] == ranges["update"][1] and math.isinf(ranges["cache"][1])


def test_equal_replays_do_not_take_over_from_the_fastest():
    # both GPU-bound at 20 µs, one 0.5% cheaper: not a crossover; the cheaper change wins throughout
    costs = {"cache": ShapeCost(20.1, 3.0, 1.0), "recapture": ShapeCost(20.0, 3.0, 170.0)}
    assert winning_ranges(costs, 64) == {"cache": (1.0, math.inf)}


def _synthetic(costs: dict[str, ShapeCost], ks=(1, 4, 16, 64)) -> pd.DataFrame:
    rows = []
    for mode, cost in costs.items():
        for k in ks:
            wall = float(cost.at(k))
            rows.append({"scenario": "s", "chain": "c", "params": json.dumps({"k": k}), "mode": mode,
                         "status": "ok", "iterations_per_shape": k, "wall_us_per_iter": wall,
                         "gpu_us_per_iter": wall, "cpu_us_per_iter": cost.host + cost.per_change / k,
                         "setup_us_per_change": cost.per_change})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_model_recovers_host_change_and_gpu_costs_and_the_crossovers():
    truth = {
        "eager": ShapeCost(0.0, 50.0, 0.0),
        "update": ShapeCost(20.0, 4.0, 60.0),
        "recapture": ShapeCost(20.0, 4.0, 150.0),
    }
    model = fit_shape_model(_synthetic(truth))
    fits = model.set_index("mode")
    update = fits.loc["update"]
    assert update["host_us"] == pytest.approx(4.0) and update["per_change_us"] == pytest.approx(60.0)
    assert update["gpu_bound_us"] == pytest.approx(20.0) and update["fixed_us"] == pytest.approx(20.0)
    assert update["rel_rmse"] == pytest.approx(0.0, abs=1e-9)
    assert update["beats_eager_above_iters_per_shape"] == pytest.approx(60 / 46, rel=0.005)
    assert fits.loc["recapture", "beats_eager_above_iters_per_shape"] == pytest.approx(150 / 46, rel=0.005)
    assert fits.loc["eager", "wins_to_iters_per_shape"] == pytest.approx(60 / (50 * 0.98 - 4), rel=0.005)
    assert fits.loc["update", "wins_from_iters_per_shape"] == fits.loc["eager", "wins_to_iters_per_shape"]
    assert pd.isna(fits.loc["recapture", "wins_from_iters_per_shape"])  # never the fastest by 2%
    assert set(model["fit"]) == {"iterations_per_shape"} and (model["group"] == "{}").all()


def test_one_number_of_iterations_per_shape_gives_no_model_row():
    costs = {"eager": ShapeCost(0.0, 5.0, 0.0), "recapture": ShapeCost(0.0, 6.0, 100.0)}
    assert fit_shape_model(_synthetic(costs, ks=(1,))).empty


def test_a_run_of_one_shape_case_writes_its_tables(tmp_path: Path):
    """One number of iterations per shape leaves the cost model nothing to fit; the pass still ends
    with its tables."""
    from launchbench.report.run_files import write_tables

    plan = runner.plan([SHAPES], Overrides(passes=1, max_time=0.1))
    plan = runner.Plan([c for c in plan.cases if c.case_id == "mlp/per_shape=16"], plan.scenarios, plan.files)
    options = runner.RunOptions(
        isolate=False, backend_factory=lambda _device: ScriptedBackend(), write_tables=write_tables
    )
    record = runner.run(plan, tmp_path / "one", options)
    assert record.cases[0].outputs_match is True
    assert len(pd.read_csv(tmp_path / "one" / "results.csv")) == 4  # eager and the three strategies


def test_a_mode_that_never_beats_eager_has_an_infinite_crossover():
    costs = {"eager": ShapeCost(0.0, 5.0, 0.0), "recapture": ShapeCost(0.0, 6.0, 100.0)}
    fits = fit_shape_model(_synthetic(costs)).set_index("mode")
    assert math.isinf(fits.loc["recapture", "beats_eager_above_iters_per_shape"])


def test_costmodel_csv_holds_both_fits_and_keeps_the_chain_length_columns_first():
    length = pd.DataFrame(
        [
            {
                "scenario": "q",
                "chain": "e",
                "params": json.dumps({"length": n}),
                "mode": mode,
                "status": "ok",
                "launches_per_iter": n,
                "wall_us_per_iter": (1 + 6 * n) if mode == "eager" else (25 + 0.5 * n),
                "iterations_per_shape": None,
            }
            for n in (1, 10, 100)
            for mode in ("eager", "graph")
        ]  # fmt: skip
    )
    shapes = _synthetic({"eager": ShapeCost(0.0, 50.0, 0.0), "cache": ShapeCost(8.0, 3.0, 2.0)})
    model = cost_model_table(pd.concat([length, shapes], ignore_index=True))
    assert list(model["fit"]) == [
        "chain_length",
        "chain_length",
        "iterations_per_shape",
        "iterations_per_shape",
    ]
    assert list(model.columns[:4]) == ["scenario", "chain", "group", "mode"]
    assert model.loc[model["fit"] == "chain_length", "crossover_launches"].notna().all()


def test_the_fit_groups_by_the_other_sweep_values(shape_run: RunRecord):
    model = fit_shape_model(run_table(shape_run))
    assert set(model["chain"]) == {"mlp", "refused"} and (model["n_points"] == 3).all()
    mlp = model[model["chain"] == "mlp"].set_index("mode")
    assert mlp.loc["cache", "wins_from_iters_per_shape"] == 1.0  # a cache that holds every shape wins
    # the scripted cost per change: 8 launches × SHAPE_CHANGE_COST, in µs
    assert mlp.loc["update", "per_change_us"] == pytest.approx(
        8 * SHAPE_CHANGE_COST["update"] * 1e6, rel=0.05
    )


# --- the figure, the console, compare and check ------------------------------------------------------------------


def test_the_shape_figure_draws_every_mode_its_fit_and_crossovers(shape_run: RunRecord):
    fig = fig_shapes.figure_shape_changes(shape_run)
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.get_label() == "panel"]
    assert [ax.get_title() for ax in panels] == ["mlp, 4 shapes", "refused, 4 shapes"]
    labels = [text.get_text() for text in fig.legends[0].get_texts()]
    assert (
        fig_style.MODE_LABELS["update"] in labels
        and "lines: model, max(GPU, host + per change / k)" in labels
    )
    assert "iterations per shape" in panels[0].get_xlabel() and panels[0].get_xscale() == "log"
    # in `refused`, recapture and update cross eager between 1 and 16 iterations per shape; cache beats it from 1
    crossings = [line for line in panels[1].get_lines() if line.get_label() == "_beats"]
    assert len(crossings) == 2


def test_shape_runs_get_a_sixth_figure_and_other_figures_leave_them_out(shape_run: RunRecord, tmp_path: Path):
    paths = fig_write.write_run_plots(shape_run, tmp_path, dpi=40)  # which files, not their pixels
    assert [p.stem for p in paths] == [*fig_write.FIGURES, fig_write.SHAPE_FIGURE]
    assert [p.title for p in fig_panels.panels(fig_panels.plot_table(shape_run))] == ["fixed (scale)"]


def test_the_run_summary_has_the_shape_table_and_the_fitted_crossovers(shape_run: RunRecord, tmp_path: Path):
    console = plain_console(file=(tmp_path / "out.txt").open("w"))
    print_summary(console, shape_run, tmp_path)
    console.file.close()
    text = (tmp_path / "out.txt").read_text()
    assert "sizes that change between iterations" in text and "refused/per_shape=16" in text
    assert (
        "max(GPU, host + per change / k iterations per shape)" in text and "fastest: cache for k ≥ 1" in text
    )


def test_compare_gates_a_slower_strategy(shape_run: RunRecord, tmp_path: Path):
    from compare_helpers import scale_rows

    slower = scale_rows(shape_run, {("shapes", "mlp/per_shape=4", "update")}, 1.2)
    write_run(tmp_path / "base", shape_run)
    write_run(tmp_path / "cur", slower)
    args = ["compare", str(tmp_path / "base"), str(tmp_path / "cur"), "--format", "json"]
    result = CliRunner().invoke(cli, [*args, "--fail-on", "wall_us_per_iter:5%"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    rows = json.loads(result.stdout)["rows"]
    verdicts = {(r["case"], r["mode"]): r["verdict"] for r in rows if r["metric"] == "wall_us_per_iter"}
    assert verdicts[("mlp/per_shape=4", "update")] == "slower"
    assert {m for (c, m) in verdicts if c == "mlp/per_shape=4"} == {"eager", "recapture", "cache", "update"}
    assert [k for k, v in verdicts.items() if v == "slower"] == [("mlp/per_shape=4", "update")]
    same = CliRunner().invoke(cli, ["compare", str(tmp_path / "base"), str(tmp_path / "base"), "--fail-on",
                                    "wall_us_per_iter:5%"], catch_exceptions=False)  # fmt: skip
    assert same.exit_code == 0, same.output


def test_check_bounds_a_strategy_of_a_shape_case(shape_run: RunRecord, tmp_path: Path):
    write_run(tmp_path / "r", shape_run)
    text = SHAPES.read_text() + (
        "expect:\n"
        "  - {case: 'mlp/per_shape=1', mode: cache, metric: wall_us_per_iter, max: 1000}\n"
        "  - {case: 'mlp/per_shape=1', mode: update, metric: setup_us_per_change, max: 1}\n"
    )
    scenario = _write(tmp_path / "shapes.yaml", text)
    result = CliRunner().invoke(
        cli, ["check", str(tmp_path / "r"), "-s", str(scenario)], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output  # update pays 24 µs per change, above the 1 µs bound
    assert "setup_us_per_change" in result.output


def test_compare_and_plot_work_on_the_committed_h200_run(tmp_path: Path):
    run_dir = str(ROOT / "results" / "shape-changes-h200")
    args = [
        "compare",
        run_dir,
        run_dir,
        "--fail-on",
        "wall_us_per_iter:5%",
        "--allow-blind",
        "--format",
        "json",
    ]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    modes = {r["mode"] for r in json.loads(result.stdout)["rows"]}
    assert modes == {"eager", "recapture", "cache", "update"}
    run = load_run(run_dir)
    assert all(case.outputs_match for case in run.cases) and len(run.cases) == 9
    assert [p.stem for p in fig_write.write_run_plots(run, tmp_path, dpi=40)][-1] == fig_write.SHAPE_FIGURE
