"""launchbench.api on a CPU: load, tables and compare on committed runs (the gates of results/compare/gates.txt),
run through the scripted backend in this process, run's argument checks, and the lazy package names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

import launchbench
from launchbench import api
from launchbench.analysis.gate import GateRuleError
from launchbench.errors import LaunchbenchError, NoGpuError, ScenarioError
from launchbench.results.store import ResultsFileError
from launchbench.run.overrides import OverridesError
from launchbench.scenario.load import load_scenario

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "results" / "quickstart-h200"
QUICK_B = ROOT / "results" / "quickstart-h200-b"
LONGER = ROOT / "results" / "quickstart-h200-longer"
BACKEND = "fakes:scripted_backend"
TINY = """\
name: tiny
description: two lengths of empty kernels
sweep:
  length: [1, 10]
chains:
  empty:
    - kind: empty
      repeat: $length
"""
FAST = {"max_time": 0.2, "passes": 1, "min_samples": 3, "isolate": False, "backend": BACKEND}


# --------------------------------------------------------------------------------------------- load


def test_load_reads_a_run_directory_and_names_its_cases() -> None:
    run = api.load(QUICK)
    assert run.path == QUICK
    assert [case.case_id for case in run.cases][:2] == ["empty/length=1", "empty/length=10"]
    assert run.case("empty/length=1").modes == ("eager", "graph")


def test_a_case_speedup_is_eager_over_the_mode_from_results_csv() -> None:
    csv = pd.read_csv(QUICK / "results.csv")
    rows = csv[csv["case"] == "scale/length=100"].set_index("mode")["wall_us_per_iter"]
    case = api.load(QUICK).case("scale/length=100")
    assert case.speedup("graph") == pytest.approx(rows["eager"] / rows["graph"], rel=1e-9)
    assert case.median("eager", "wall_us_per_iter") == pytest.approx(rows["eager"], rel=1e-9)


def test_a_run_of_many_cases_asks_for_one_by_name() -> None:
    run = api.load(QUICK)
    with pytest.raises(api.ApiError, match="8 cases .*name one with .case"):
        run.speedup("graph")
    with pytest.raises(api.ApiError, match="no case named 'nosuch'"):
        run.case("nosuch")
    with pytest.raises(api.ApiError, match="no mode 'torch_graph'"):
        run.case("empty/length=1").speedup("torch_graph")


def test_load_of_no_run_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(ResultsFileError, match=str(tmp_path)):
        api.load(tmp_path)


# -------------------------------------------------------------------------------------------- compare


def test_compare_passes_and_fails_as_the_committed_gates_say() -> None:
    settings = {"gate_rows": "gpu-bound", "fail_on": "wall_us_per_iter:8%"}
    same = api.compare(QUICK, QUICK_B, **settings)  # type: ignore[arg-type]
    assert same.passed and same.gate is not None and len(same.gate.checks) == 7
    longer = api.compare(api.load(QUICK), LONGER, **settings)  # type: ignore[arg-type]
    assert not longer.passed
    assert sum(c.kind == "regression" and not c.passed for c in longer.gate.checks) == 6  # type: ignore[union-attr]


def test_the_comparison_table_is_compares_csv() -> None:
    from launchbench.report.tables import comparison_csv

    comparison = api.compare(QUICK, QUICK_B, metrics=["wall_us_per_iter"], thresholds=["10%"])
    table = comparison.table()
    assert list(table.columns) == comparison_csv(comparison.result, None).splitlines()[0].split(",")
    assert len(table) == 16 and set(table["metric"]) == {"wall_us_per_iter"}


def test_the_verdicts_are_typed_per_row_and_metric() -> None:
    comparison = api.compare(QUICK, QUICK_B, metrics=["wall_us_per_iter", "cpu_us_per_launch"])
    assert len(comparison.verdicts) == 32
    verdict = comparison.verdicts[0]
    assert isinstance(verdict, api.VerdictRow) and verdict.metric == "wall_us_per_iter"
    assert verdict.verdict in ("faster", "slower", "same", "uncertain", "missing", "failed")
    found = comparison.metric(verdict.case, verdict.mode, "wall_us_per_iter")
    assert found.ratio == verdict.ratio
    assert comparison.passed is not any(v.verdict == "slower" for v in comparison.verdicts)


def test_a_threshold_counts_as_the_command_line_counts_it() -> None:
    loose = api.compare(QUICK, LONGER, metrics=["wall_us_per_iter"], thresholds="wall_us_per_iter:1000%")
    assert {v.verdict for v in loose.verdicts} <= {"same", "uncertain"}
    assert loose.passed


AB_DIR = ROOT / "results" / "ab-h200" / "defaults" / "regression"


@pytest.mark.parametrize(
    ("sides", "options", "paired"),
    [
        ((AB_DIR / "a", AB_DIR / "b"), {}, True),
        ((QUICK, LONGER), {"gate_rows": "gpu-bound", "fail_on": "wall_us_per_iter:8%"}, False),
    ],
)
def test_compare_is_the_command_lines_comparison(
    sides: tuple[Path, Path], options: dict[str, str], paired: bool, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from launchbench.cli import cli

    comparison = api.compare(*sides, **options)  # type: ignore[arg-type]
    assert comparison.result.paired is paired  # the sides of one ab directory are paired rounds
    flags = [f"--{key.replace('_', '-')}={value}" for key, value in options.items()]
    out = tmp_path / "compare.csv"
    args = ["compare", *map(str, sides), *flags, "--format", "csv", "-o", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    gated_fail = comparison.gate is not None and not comparison.passed  # no rules: compare exits 0
    assert result.exit_code == (1 if gated_fail else 0)
    assert out.read_text() == comparison.table().to_csv(index=False)


@pytest.mark.parametrize(
    ("settings", "error", "words"),
    [
        ({"fail_on": "wall_us_per_iter"}, GateRuleError, "wall_us_per_iter"),
        ({"thresholds": "ten"}, LaunchbenchError, "ten"),
        ({"allow": ["everything"]}, api.ApiError, "allow: unknown everything"),
    ],
)
def test_compare_refuses_settings_it_cannot_use(settings: dict, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        api.compare(QUICK, QUICK_B, **settings)


# ------------------------------------------------------------------------------------------------ run


def test_run_measures_a_yaml_text_and_keeps_it_in_its_run_directory(tmp_path: Path) -> None:
    run = api.run(TINY, out_dir=tmp_path / "r", **FAST)  # type: ignore[arg-type]
    assert run.path == tmp_path / "r" and (run.path / "scenario.yaml").read_text() == TINY
    assert run.record.scenarios[0].file == str(tmp_path / "r" / "scenario.yaml")
    written = pd.read_csv(run.path / "results.csv")
    assert list(run.table().columns) == list(written.columns)
    assert run.table()["wall_us_per_iter"].tolist() == pytest.approx(written["wall_us_per_iter"].tolist())
    assert run.case("empty/length=10").speedup("graph") > 2  # the scripted backend: 6.5 µs against 0.5 µs
    assert api.load(run.path).record == run.record


def test_a_measured_runs_table_is_the_one_its_run_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run's Run reads the results table its run wrote at its end: none is built again after the run."""
    import launchbench.report.run_files  # noqa: F401  (the writer holds the real run_table)
    from launchbench.analysis import table

    built_after, build = [], table.run_table
    monkeypatch.setattr(table, "run_table", lambda run, *args: built_after.append(run) or build(run, *args))
    run = api.run(TINY, out_dir=tmp_path / "r", **FAST)  # type: ignore[arg-type]
    assert run.case("empty/length=10").speedup("graph") > 2 and len(run.table()) == len(run.cases) * 2
    assert built_after == []
    assert api.load(run.path).table().equals(run.table())  # what load builds from results.json


def test_run_takes_a_path_a_mapping_and_a_scenario_alike(tmp_path: Path) -> None:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    given: list[api.ScenarioInput] = [path, str(path), yaml.safe_load(TINY), load_scenario(path)]
    runs = [api.run(g, out_dir=tmp_path / f"r{i}", **FAST) for i, g in enumerate(given)]  # type: ignore[arg-type]
    assert {tuple(c.case_id for c in r.cases) for r in runs} == {("empty/length=1", "empty/length=10")}
    assert runs[0].record.scenarios[0].file == str(path)


def test_run_without_out_dir_makes_one_under_the_results_root(tmp_path: Path) -> None:
    run = api.run(TINY, results_root=tmp_path, quick=True, **{**FAST, "max_time": None, "passes": None})  # type: ignore[arg-type]
    assert run.path.parent == tmp_path and run.path.name.endswith("-tiny")
    assert run.record.cases[0].passes_done == 2  # the quick preset's passes


@pytest.mark.parametrize(
    ("settings", "error", "words"),
    [
        ({"max_time": -1.0}, OverridesError, "^max_time -1.0: "),
        ({"passes": 0}, OverridesError, "^passes 0: "),
        ({"target_noise": float("nan")}, OverridesError, "target_noise"),
        ({"device": -1}, api.ApiError, "device -1"),
    ],
)
def test_run_refuses_bad_settings_before_anything_is_measured(
    tmp_path: Path, settings: dict, error: type, words: str
) -> None:
    with pytest.raises(error, match=words):
        api.run(TINY, out_dir=tmp_path / "r", backend="nosuch:backend", **settings)
    assert not (tmp_path / "r").exists()


def test_run_refuses_a_bad_scenario_naming_where(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="scenario.yaml"):
        api.run(TINY.replace("kind: empty", "kind: nosuch"), out_dir=tmp_path / "r", **FAST)  # type: ignore[arg-type]
    with pytest.raises(ScenarioError, match="nosuch.yaml"):
        api.run(tmp_path / "nosuch.yaml", out_dir=tmp_path / "r", **FAST)  # type: ignore[arg-type]
    with pytest.raises(api.ApiError, match="not a int"):
        api.run(3, **FAST)  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()


def test_a_run_that_cannot_start_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    settings = {**FAST, "backend": "fakes:no_gpu_backend"}
    with pytest.raises(NoGpuError, match="no CUDA device 0"):
        api.run(TINY, out_dir=tmp_path / "r", **settings)  # type: ignore[arg-type]
    assert list((tmp_path / "r").iterdir()) == []  # the scenario file written for it is gone
    with pytest.raises(NoGpuError):
        api.run(TINY, results_root=tmp_path / "root", **settings)  # type: ignore[arg-type]
    assert list((tmp_path / "root").iterdir()) == []  # the directory claimed for it is given back


def test_run_never_writes_over_a_scenario_file_in_out_dir(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "scenario.yaml").write_text("mine\n")
    with pytest.raises(api.ApiError, match="scenario.yaml exists"):
        api.run(TINY, out_dir=tmp_path / "r", **FAST)  # type: ignore[arg-type]
    assert (tmp_path / "r" / "scenario.yaml").read_text() == "mine\n"


# ------------------------------------------------------------------------------------ the package names


def test_the_package_names_are_the_apis() -> None:
    assert launchbench.load is api.load and launchbench.compare is api.compare
    assert launchbench.Run is api.Run and launchbench.Comparison is api.Comparison
    with pytest.raises(AttributeError, match="no attribute 'nosuch'"):
        launchbench.nosuch  # noqa: B018


def test_the_runner_package_is_the_apis_run(tmp_path: Path) -> None:
    import launchbench.run.runner  # the package is loaded: launchbench.run is the package, and callable

    run = launchbench.run(TINY, out_dir=tmp_path / "r", **FAST)
    assert isinstance(run, api.Run) and run.case("empty/length=1").speedup() > 2
    assert launchbench.run.runner.plan is not None


def test_importing_the_package_or_its_errors_loads_nothing_heavy() -> None:
    code = (
        "import sys, launchbench, launchbench.errors; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('launchbench', 'pandas', 'numpy', 'pydantic', 'scipy', 'yaml')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['launchbench', 'launchbench.errors']"
