"""Figures from result files: every figure renders (PNG and SVG), has its series, and survives missing graphs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from launchbench.analysis.table import run_table
from launchbench.cli import cli
from launchbench.report import plots
from launchbench.report.run_files import write_run_files as write_run
from launchbench.results.schema import WALL, CaseResult, ModeResult, RunRecord
from launchbench.results.store import load_run
from tests.builders import LENGTHS, make_case, make_run

H200_RUN = Path(__file__).parent / "data" / "h200" / "quickstart-a" / "results.json"
SINGLE_RUN_FILES = {
    "wall_per_launch_vs_chain_length",
    "speedup_vs_chain_length",
    "cpu_per_launch",
    "graph_lifecycle",
    "sample_distributions",
}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def run() -> RunRecord:
    """The real H200 quickstart run where the repository has it, else the synthetic one."""
    return load_run(H200_RUN) if H200_RUN.exists() else make_run()


@pytest.fixture
def synthetic() -> RunRecord:
    return make_run()


@pytest.fixture(scope="module")
def real_figures() -> dict[str, Figure]:
    """Every single-run figure of the real run (or the synthetic one), built once for the tests that
    read what a figure shows."""
    run = load_run(H200_RUN) if H200_RUN.exists() else make_run()
    return {name: build(run) for name, build in plots.FIGURES.items()}


def small(run: RunRecord) -> RunRecord:
    """The run's first two cases (one chain at two lengths): every figure, drawn quickly, for tests of
    where files go rather than what they show."""
    return run.model_copy(update={"cases": run.cases[:2]})


def caseless(run: RunRecord) -> RunRecord:
    """The run with no case: every figure says so, drawn in a tenth of the time (for tests of folders)."""
    return run.model_copy(update={"cases": []})


def panel_axes(fig: Figure) -> list[Axes]:
    return [ax for ax in fig.axes if ax.get_label() == "panel"]


def named_lines(ax: Axes) -> list[str]:
    return [line.get_label() for line in ax.lines if not line.get_label().startswith("_")]


def figure_text(fig: Figure) -> str:
    return "\n".join(t.get_text() for t in fig.texts)


def scaled(run: RunRecord, factor: dict[tuple[str, str], float]) -> RunRecord:
    """A copy of ``run`` whose wall samples of (case id, mode) are multiplied by ``factor``."""
    cases = []
    for case in run.cases:
        modes = dict(case.modes)
        for mode, result in case.modes.items():
            f = factor.get((case.case_id, mode))
            if f is not None:
                samples = {**result.samples, WALL: [v * f for v in result.samples[WALL]]}
                modes[mode] = result.with_samples(samples)
        cases.append(case.model_copy(update={"modes": modes}))
    return run.model_copy(update={"cases": cases})


def not_capturable(case: CaseResult) -> CaseResult:
    graph = ModeResult(mode="graph", status="not_capturable", reason="cuBLAS refuses capture")
    return case.model_copy(update={"modes": {**case.modes, "graph": graph}})


def check_image(path: Path) -> None:
    assert path.exists() and path.stat().st_size > 0
    if path.suffix == ".png":
        assert path.read_bytes()[:8] == PNG_MAGIC
        height, width, channels = matplotlib.image.imread(path).shape
        assert 700 <= width <= 900 and height > 200 and channels in (3, 4)
        assert path.stat().st_size < 150_000, f"{path.name} is {path.stat().st_size} bytes"
    else:
        root = ET.parse(path).getroot()
        assert root.tag.endswith("svg")


# -------------------------------------------------------------------------------------------- files


def test_every_figure_renders_as_png(real_figures: dict[str, Figure], tmp_path: Path) -> None:
    """Each figure of the whole run, drawn to PNG."""
    for name, fig in real_figures.items():
        check_image(plots.save_figure(fig, tmp_path, name, "png"))


def test_every_figure_renders_as_svg(run: RunRecord, tmp_path: Path) -> None:
    """Every figure through write_all_plots as SVG (another backend), from two of the run's cases."""
    paths = plots.write_all_plots([small(run)], tmp_path, "svg")
    assert {p.stem for p in paths} == SINGLE_RUN_FILES
    assert all(p.parent == tmp_path and p.suffix == ".svg" for p in paths)
    for path in paths:
        check_image(path)


def test_two_runs_get_subfolders_and_a_comparison(synthetic: RunRecord, tmp_path: Path) -> None:
    paths = plots.write_all_plots(
        [caseless(synthetic), caseless(make_run(seed=1))], tmp_path, labels=["base", "cur"]
    )
    assert {p.relative_to(tmp_path).parts[0] for p in paths} == {"base", "cur", "comparison_ratio.png"}
    assert len(paths) == 2 * len(SINGLE_RUN_FILES) + 1
    for path in paths:
        check_image(path)


def test_three_runs_have_no_comparison(synthetic: RunRecord, tmp_path: Path) -> None:
    paths = plots.write_all_plots([caseless(synthetic)] * 3, tmp_path)
    assert {p.parent.name for p in paths} == {"run1", "run2", "run3"}


def test_unknown_format_is_refused(synthetic: RunRecord, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format"):
        plots.write_all_plots([synthetic], tmp_path, "jpg")


def test_svg_is_reproducible(synthetic: RunRecord, tmp_path: Path) -> None:
    first = plots.save_figure(plots.figure_speedup(small(synthetic)), tmp_path / "a", "s", "svg")
    second = plots.save_figure(plots.figure_speedup(small(synthetic)), tmp_path / "b", "s", "svg")
    assert first.read_bytes() == second.read_bytes()


# ------------------------------------------------------------------------------------------ content


def test_every_figure_has_title_environment_and_legend(
    run: RunRecord, real_figures: dict[str, Figure]
) -> None:
    env = run.environment
    assert set(real_figures) == SINGLE_RUN_FILES
    for name, fig in real_figures.items():
        text = figure_text(fig)
        assert run.gpu_name in text
        for key in ("driver", "cupy", "cuda_runtime"):
            if env.get(key):
                assert str(env[key]) in text
        assert fig.legends, name
        assert all(ax.get_ylabel() for ax in panel_axes(fig))


@pytest.mark.parametrize("name", ["wall_per_launch_vs_chain_length", "cpu_per_launch"])
def test_mode_figures_have_a_panel_per_chain_with_eager_and_graph(
    run: RunRecord, real_figures: dict[str, Figure], name: str
) -> None:
    fig = real_figures[name]
    chains = list(dict.fromkeys(c.chain for c in run.cases))
    axes = panel_axes(fig)
    assert [ax.get_title() for ax in axes] == chains
    for ax in axes:
        assert [c.get_label() for c in ax.containers] == [
            plots.MODE_LABELS["eager"],
            plots.MODE_LABELS["graph"],
        ]
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert "(µs)" in ax.get_ylabel() and "launches" in ax.get_xlabel()


def test_wall_figure_plots_the_medians_with_their_ci(synthetic: RunRecord) -> None:
    ax = panel_axes(plots.figure_wall_per_launch(synthetic))[0]
    eager = ax.containers[0]
    x, y = eager.lines[0].get_data()
    assert list(x) == list(LENGTHS)
    case = synthetic.cases[0]
    assert y[0] == pytest.approx(np.median(case.metric_samples("eager", "wall_us_per_launch")))
    assert eager.has_yerr


def test_speedup_figure_has_a_series_per_chain_and_the_parity_line(synthetic: RunRecord) -> None:
    fig = plots.figure_speedup(synthetic)
    (ax,) = panel_axes(fig)
    labels = named_lines(ax)
    assert [label.split(":")[0] for label in labels[:2]] == ["empty", "scale"]
    assert "speedup 1× (no gain)" in labels
    assert ax.get_xscale() == "log"
    assert "(×)" in ax.get_ylabel()


def test_lifecycle_figure_has_three_stages_and_break_even(synthetic: RunRecord) -> None:
    fig = plots.figure_graph_lifecycle(synthetic)
    axes = panel_axes(fig)
    assert len(axes) == 2
    for ax in axes:
        assert named_lines(ax) == ["capture", "instantiate", "upload"]
        assert ax.get_xlabel() == "graph nodes" and "(µs)" in ax.get_ylabel()
    twins = [ax for ax in fig.axes if ax.get_label() == "break-even"]
    assert len(twins) == 2
    assert all(named_lines(t) == ["break-even replays (right axis)"] for t in twins)
    assert all("iterations" in t.get_ylabel() for t in twins)


def test_distribution_figure_has_a_box_per_case_and_mode(synthetic: RunRecord) -> None:
    axes = panel_axes(plots.figure_sample_distributions(synthetic))
    assert len(axes) == 2
    for ax in axes:
        assert len(ax.patches) == 2 * len(LENGTHS)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "10", "100", "1,000"]


def test_outliers_beyond_the_axis_are_counted(synthetic: RunRecord) -> None:
    case = synthetic.cases[0]
    samples = list(case.modes["eager"].samples[WALL])
    samples[:2] = [samples[0] * 5, samples[1] * 5]  # two samples 5× the rest: far beyond the whiskers
    eager = case.modes["eager"].with_samples({**case.modes["eager"].samples, WALL: samples})
    wild = synthetic.model_copy(
        update={"cases": [case.model_copy(update={"modes": {**case.modes, "eager": eager}})]}
    )
    (ax,) = panel_axes(plots.figure_sample_distributions(wild))
    assert "2↑" in [t.get_text() for t in ax.texts]


# ---------------------------------------------------------------------------------------- not capturable


def test_a_run_without_graphs_for_some_cases_renders(synthetic: RunRecord, tmp_path: Path) -> None:
    cases = [
        not_capturable(c) if c.chain == "scale" or c.case_id == "empty/length=10" else c
        for c in synthetic.cases
    ]
    run = synthetic.model_copy(update={"cases": cases})
    figures = {name: build(run) for name, build in plots.FIGURES.items()}
    for name, fig in figures.items():  # each figure drawn to a file, then read for what it shows
        check_image(plots.save_figure(fig, tmp_path, name))
    empty_ax, scale_ax = panel_axes(figures["wall_per_launch_vs_chain_length"])
    assert len(empty_ax.containers) == 2 and len(scale_ax.containers) == 1
    assert len(empty_ax.containers[1].lines[0].get_xdata()) == len(LENGTHS) - 1
    assert any("not capturable" in t.get_text() for t in scale_ax.texts)
    lifecycle = panel_axes(figures["graph_lifecycle"])
    assert any("cuBLAS" in t.get_text() for t in lifecycle[1].texts)
    (speedup_ax,) = panel_axes(figures["speedup_vs_chain_length"])
    assert any("no graph result: scale" in t.get_text() for t in speedup_ax.texts)


def test_a_run_without_any_graph_or_case_renders(synthetic: RunRecord, tmp_path: Path) -> None:
    no_graph = synthetic.model_copy(update={"cases": [not_capturable(c) for c in synthetic.cases]})
    no_cases = synthetic.model_copy(update={"cases": []})
    for i, run in enumerate((no_graph, no_cases)):
        for path in plots.write_all_plots([run], tmp_path / str(i)):
            check_image(path)


def test_a_chain_of_one_length_is_drawn_as_points(synthetic: RunRecord) -> None:
    run = synthetic.model_copy(update={"cases": [c for c in synthetic.cases if c.launches_per_iter == 100]})
    for ax in panel_axes(plots.figure_wall_per_launch(run)):
        assert all(c.lines[0].get_linestyle() == "None" for c in ax.containers)


def test_panels_split_chains_by_scenario_and_non_length_parameters(synthetic: RunRecord) -> None:
    extra = []
    for case in synthetic.cases:
        if case.chain == "scale":
            for size in (1000, 10**6):
                params = {"length": case.launches_per_iter, "size": size}
                extra.append(
                    case.model_copy(
                        update={
                            "scenario": "sizes",
                            "case_id": f"{case.case_id},size={size}",
                            "params": params,
                        }
                    )
                )
    run = synthetic.model_copy(update={"cases": [*synthetic.cases, *extra]})
    titles = [ax.get_title() for ax in panel_axes(plots.figure_wall_per_launch(run))]
    assert titles == [
        "quickstart: empty",
        "quickstart: scale",
        "sizes: scale, size=1000",
        "sizes: scale, size=1000000",
    ]


def test_a_chain_whose_length_two_axes_set_is_one_panel_with_the_cost_models_fit() -> None:
    """launches = length × copies: the cost model fits over both axes, so the plot draws one panel over
    every launch count and finds that fit's crossover (the plots used to split it into six one-point
    panels with no crossover, by a length rule of their own)."""
    rng = np.random.default_rng(0)
    cases = []
    for length in (1, 10, 100):
        for copies in (1, 2):
            case = make_case("empty", length * copies, rng)
            params = {"length": length, "copies": copies}
            cases.append(
                case.model_copy(
                    update={"case_id": f"empty/length={length},copies={copies}", "params": params}
                )
            )
    run = make_run().model_copy(update={"cases": cases})
    assert [panel.key for panel in plots.panels(run_table(run))] == [("quickstart", "empty", "")]
    # builders: eager 6.5 µs per launch, graph 0.5 µs per launch + 1.6 µs per iteration
    assert plots.crossovers(run)[("quickstart", "empty", "")] == pytest.approx(1.6 / 6.0, rel=0.25)


# ---------------------------------------------------------------------------------------- crossover


def test_crossover_is_the_cost_model_line_fit(synthetic: RunRecord) -> None:
    found = plots.crossovers(synthetic)
    # builders: eager 6.5 µs per launch, graph 0.5 µs per launch + 1.6 µs per iteration → 1.6 / 6.0 launches
    assert found[("quickstart", "empty", "")] == pytest.approx(1.6 / 6.0, rel=0.25)
    assert found[("quickstart", "scale", "")] == pytest.approx(1.6 / (14 - 2.2), rel=0.25)


def test_crossovers_are_drawn_where_the_cost_model_puts_them_and_nan_means_none(
    synthetic: RunRecord, monkeypatch
) -> None:
    def fit_cost_model(table: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(
            {"scenario": ["quickstart"] * 2, "chain": ["empty", "scale"], "mode": ["graph"] * 2,
             "crossover_launches": [42.0, float("nan")]}
        )  # fmt: skip

    monkeypatch.setattr(plots, "fit_cost_model", fit_cost_model)
    found = plots.crossovers(synthetic)
    assert found[("quickstart", "empty", "")] == 42.0
    assert found[("quickstart", "scale", "")] is None
    assert "no crossover fitted" in plots._crossover_text(None, np.array(LENGTHS))
    (ax,) = panel_axes(plots.figure_speedup(synthetic))
    assert any(line.get_xdata()[0] == 42.0 for line in ax.lines if line.get_label() == "_crossover")


def test_a_graph_that_never_wins_says_so(synthetic: RunRecord) -> None:
    slow = scaled(synthetic, {(c.case_id, "graph"): 30.0 for c in synthetic.cases})
    assert all(v == float("inf") for v in plots.crossovers(slow).values())
    (ax,) = panel_axes(plots.figure_speedup(slow))
    assert all("graph never wins" in label for label in named_lines(ax)[:2])


# --------------------------------------------------------------------------------------- comparison


def test_comparison_verdicts_are_the_compare_commands(synthetic: RunRecord) -> None:
    from launchbench.analysis.compare import CompareSettings, compare_runs

    cur = scaled(make_run(seed=1), {("scale/length=100", "eager"): 1.2})
    table = plots.comparison_table(synthetic, cur)
    expected = compare_runs(synthetic, cur, CompareSettings(metrics=("wall_us_per_launch",)))
    for row in expected.rows:
        got = table[(table["case"] == row.case) & (table["mode"] == row.mode)]["verdict"].item()
        assert got == row.metric("wall_us_per_launch").verdict


def test_comparison_counts_cases_of_a_scenario_only_one_run_has(synthetic: RunRecord) -> None:
    """A case id shared by two scenarios is still two cases (single-chain files all call theirs 'chain')."""
    renamed = [c.model_copy(update={"scenario": "other"}) for c in synthetic.cases[:2]]
    cur = synthetic.model_copy(update={"cases": [*renamed, *synthetic.cases[2:]]})
    assert "4 cases in only one run not shown" in figure_text(plots.figure_comparison(synthetic, cur))


def test_comparison_colours_regressions_and_improvements(synthetic: RunRecord, tmp_path: Path) -> None:
    cur = scaled(make_run(seed=1), {("scale/length=100", "eager"): 1.2, ("empty/length=1000", "graph"): 0.8})
    table = plots.comparison_table(synthetic, cur)
    verdicts = {(r.case, r.mode): r.verdict for r in table.itertuples()}
    assert verdicts[("scale/length=100", "eager")] == "slower"
    assert verdicts[("empty/length=1000", "graph")] == "faster"
    assert verdicts[("empty/length=1", "graph")] == "same"
    fig = plots.figure_comparison(synthetic, cur)
    eager_ax, graph_ax = panel_axes(fig)
    for ax in (eager_ax, graph_ax):
        assert sum(len(c.lines[0].get_xdata()) for c in ax.containers) == len(synthetic.cases)
    colours = {c.get_label(): c.lines[0].get_color() for c in eager_ax.containers}
    assert colours[plots.VERDICTS[0][1]] == plots.VERMILLION
    path = plots.plot_comparison(synthetic, cur, tmp_path)
    assert path.name == "comparison_ratio.png"
    check_image(path)


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_plot_writes_into_the_run_directory(synthetic: RunRecord, tmp_path: Path) -> None:
    write_run(tmp_path / "run", small(synthetic))
    result = CliRunner().invoke(cli, ["plot", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    printed = [Path(line) for line in result.output.splitlines()]
    assert {p.stem for p in printed} == SINGLE_RUN_FILES
    assert all(p.parent == tmp_path / "run" / "plots" and p.exists() for p in printed)


def test_cli_plot_two_runs_as_svg(synthetic: RunRecord, tmp_path: Path) -> None:
    write_run(tmp_path / "base", small(synthetic))
    write_run(tmp_path / "cur", small(make_run(seed=1)))
    out = tmp_path / "figs"
    result = CliRunner().invoke(cli, ["plot", str(tmp_path / "base"), str(tmp_path / "cur" / "results.json"),
                                      "-d", str(out), "--format", "svg"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (out / "comparison_ratio.svg").exists()
    assert (out / "base" / "graph_lifecycle.svg").exists() and (out / "cur" / "cpu_per_launch.svg").exists()


def test_cli_plot_bad_results_file_exits_2(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text("{ not json")
    result = CliRunner().invoke(cli, ["plot", str(tmp_path)])
    assert result.exit_code == 2
    assert "not valid JSON" in result.output
    missing = CliRunner().invoke(cli, ["plot", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2


def test_cli_plot_has_help() -> None:
    result = CliRunner().invoke(cli, ["plot", "--help"])
    assert result.exit_code == 0 and "--format" in result.output and "--out" in result.output
