"""Figures from result files: every figure renders (PNG and SVG) at the dpi asked, has its series and a
caption naming its interval, survives missing graphs, is left out when it has nothing to show, draws
chains of one length as one grouped bar chart, and compares two runs as `launchbench compare` does."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.axes import Axes
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from launchbench.analysis import table as analysis_table
from launchbench.analysis.compare import CompareSettings, Comparison, compare_runs
from launchbench.analysis.defaults import DEFAULT_METRICS
from launchbench.analysis.table import run_table
from launchbench.cli import cli
from launchbench.cli.plot import comparison_of
from launchbench.report.plots import comparison as fig_comparison
from launchbench.report.plots import distributions as fig_distributions
from launchbench.report.plots import lifecycle as fig_lifecycle
from launchbench.report.plots import modes as fig_modes
from launchbench.report.plots import panels as fig_panels
from launchbench.report.plots import speedup as fig_speedup
from launchbench.report.plots import style as fig_style
from launchbench.report.plots import write as fig_write
from launchbench.report.run_files import write_run_files as write_run
from launchbench.results.metadata import AbSettings, Settings
from launchbench.results.schema import WALL, CaseResult, ModeResult, RunRecord
from launchbench.results.store import load_run
from tests.builders import LENGTHS, make_case, make_run

H200_RUN = Path(__file__).parents[1] / "data" / "h200" / "quickstart-a" / "results.json"
ROOT = Path(__file__).resolve().parents[2]
SHAPE_RUN = ROOT / "results" / "shape-changes-h200"
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
    return {name: build(run) for name, build in fig_write.FIGURES.items()}


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


def box_count(ax: Axes) -> int:
    """The boxes of a distribution panel (drawn as one polygon collection per mode)."""
    return sum(len(c.get_paths()) for c in ax.collections if c.get_label() == "_boxes")


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


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) in pixels."""
    height, width, _ = matplotlib.image.imread(path).shape
    return width, height


def check_image(path: Path, width: int = 1600) -> None:
    """A PNG of ``width`` pixels (8 inches at the default 200 dpi) under 400 KB, or a parseable SVG."""
    assert path.exists() and path.stat().st_size > 0
    if path.suffix == ".png":
        assert path.read_bytes()[:8] == PNG_MAGIC
        height, got, channels = matplotlib.image.imread(path).shape
        assert got == width and height > width / 4 and channels in (3, 4)
        assert path.stat().st_size < 400_000, f"{path.name} is {path.stat().st_size} bytes"
    else:
        root = ET.parse(path).getroot()
        assert root.tag.endswith("svg")


# -------------------------------------------------------------------------------------------- files


def test_every_figure_renders_as_png(real_figures: dict[str, Figure], tmp_path: Path) -> None:
    """Each figure of the whole run, drawn to PNG."""
    for name, fig in real_figures.items():
        check_image(fig_style.save_figure(fig, tmp_path, name, "png"))


def test_every_figure_renders_as_svg(run: RunRecord, tmp_path: Path) -> None:
    """Every figure through write_all_plots as SVG (another backend), from two of the run's cases."""
    paths = fig_write.write_all_plots([small(run)], tmp_path, "svg")
    assert {p.stem for p in paths} == SINGLE_RUN_FILES
    assert all(p.parent == tmp_path and p.suffix == ".svg" for p in paths)
    for path in paths:
        check_image(path)


def test_two_runs_get_subfolders_and_a_comparison(synthetic: RunRecord, tmp_path: Path) -> None:
    base, cur = small(synthetic), small(make_run(seed=1))
    paths = fig_write.write_all_plots(
        [base, cur], tmp_path, labels=["base", "cur"], dpi=50, comparison=compared(base, cur)
    )
    assert {p.relative_to(tmp_path).parts[0] for p in paths} == {"base", "cur", "comparison_ratio.png"}
    assert len(paths) == 2 * len(SINGLE_RUN_FILES) + 1
    for path in paths:
        check_image(path, width=400)


def test_three_runs_have_no_comparison(synthetic: RunRecord, tmp_path: Path) -> None:
    written = fig_write.draw_plots([caseless(synthetic)] * 3, tmp_path)
    assert {s.path.parent.name for s in written.skipped} == {"run1", "run2", "run3"}
    assert not any(fig_write.COMPARISON_FIGURE in s.path.name for s in written.skipped)


def test_unknown_format_is_refused(synthetic: RunRecord, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format"):
        fig_write.write_all_plots([synthetic], tmp_path, "jpg")


def test_svg_is_reproducible(synthetic: RunRecord, tmp_path: Path) -> None:
    first = fig_style.save_figure(fig_speedup.figure_speedup(small(synthetic)), tmp_path / "a", "s", "svg")
    second = fig_style.save_figure(fig_speedup.figure_speedup(small(synthetic)), tmp_path / "b", "s", "svg")
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
            if getattr(env, key):
                assert str(getattr(env, key)) in text
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
            fig_style.MODE_LABELS["eager"],
            fig_style.MODE_LABELS["graph"],
        ]
        assert ax.get_xscale() == ax.get_yscale() == "log"
        assert "(µs)" in ax.get_ylabel() and "launches" in ax.get_xlabel()


def test_wall_figure_plots_the_medians_with_their_ci(synthetic: RunRecord) -> None:
    ax = panel_axes(fig_modes.figure_wall_per_launch(synthetic))[0]
    eager = ax.containers[0]
    x, y = eager.lines[0].get_data()
    assert list(x) == list(LENGTHS)
    case = synthetic.cases[0]
    assert y[0] == pytest.approx(np.median(case.metric_samples("eager", "wall_us_per_launch")))
    assert eager.has_yerr


def test_speedup_figure_has_a_series_per_chain_and_the_parity_line(synthetic: RunRecord) -> None:
    fig = fig_speedup.figure_speedup(synthetic)
    (ax,) = panel_axes(fig)
    labels = named_lines(ax)
    assert [label.split(":")[0] for label in labels[:2]] == ["empty", "scale"]
    assert "speedup 1× (no gain)" in labels
    assert ax.get_xscale() == "log"
    assert "(×)" in ax.get_ylabel()


def test_lifecycle_figure_has_three_stages_and_break_even(synthetic: RunRecord) -> None:
    fig = fig_lifecycle.figure_graph_lifecycle(synthetic)
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
    axes = panel_axes(fig_distributions.figure_sample_distributions(synthetic))
    assert len(axes) == 2
    for ax in axes:
        assert box_count(ax) == 2 * len(LENGTHS)
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "10", "100", "1,000"]


def test_outliers_beyond_the_axis_are_counted(synthetic: RunRecord) -> None:
    case = synthetic.cases[0]
    samples = list(case.modes["eager"].samples[WALL])
    samples[:2] = [samples[0] * 5, samples[1] * 5]  # two samples 5× the rest: far beyond the whiskers
    eager = case.modes["eager"].with_samples({**case.modes["eager"].samples, WALL: samples})
    wild = synthetic.model_copy(
        update={
            "cases": [case.model_copy(update={"modes": {**case.modes, "eager": eager}}), synthetic.cases[1]]
        }
    )
    (ax,) = panel_axes(fig_distributions.figure_sample_distributions(wild))
    assert "2↑" in [t.get_text() for t in ax.texts]
    (alone,) = panel_axes(
        fig_distributions.figure_sample_distributions(wild.model_copy(update={"cases": wild.cases[:1]}))
    )
    assert "2→" in [t.get_text() for t in alone.texts]  # one length: the boxes lie along x


# ---------------------------------------------------------------------------------------- not capturable


def test_a_run_without_graphs_for_some_cases_renders(synthetic: RunRecord, tmp_path: Path) -> None:
    cases = [
        not_capturable(c) if c.chain == "scale" or c.case_id == "empty/length=10" else c
        for c in synthetic.cases
    ]
    run = synthetic.model_copy(update={"cases": cases})
    figures = {name: build(run) for name, build in fig_write.FIGURES.items()}
    for name, fig in figures.items():  # each figure drawn to a file (at 50 dpi), then read for what it shows
        check_image(fig_style.save_figure(fig, tmp_path, name, dpi=50), width=400)
    empty_ax, scale_ax = panel_axes(figures["wall_per_launch_vs_chain_length"])
    assert len(empty_ax.containers) == 2 and len(scale_ax.containers) == 1
    assert len(empty_ax.containers[1].lines[0].get_xdata()) == len(LENGTHS) - 1
    assert any("not capturable" in t.get_text() for t in scale_ax.texts)
    lifecycle = panel_axes(figures["graph_lifecycle"])
    assert any("cuBLAS" in t.get_text() for t in lifecycle[1].texts)
    (speedup_ax,) = panel_axes(figures["speedup_vs_chain_length"])
    assert any("no graph result: scale" in t.get_text() for t in speedup_ax.texts)


def test_figures_with_nothing_to_show_are_not_written(synthetic: RunRecord, tmp_path: Path) -> None:
    """No graph at all: no speedup and no life cycle; no case: nothing; each left out with its reason,
    and an old file of the name is not mistaken for a new one."""
    no_graph = synthetic.model_copy(update={"cases": [not_capturable(c) for c in synthetic.cases]})
    written = fig_write.draw_plots([no_graph], tmp_path / "a", dpi=50)
    assert {p.stem for p in written.paths} == SINGLE_RUN_FILES - {
        "speedup_vs_chain_length",
        "graph_lifecycle",
    }
    reasons = {s.path.name: s.reason for s in written.skipped}
    assert reasons == {
        "speedup_vs_chain_length.png": "no graph result (not capturable or failed)",
        "graph_lifecycle.png": "no graph was captured (not capturable or failed)",
    }
    assert not (tmp_path / "a" / "graph_lifecycle.png").exists()
    for path in written.paths:
        check_image(path, width=400)
    empty = fig_write.draw_plots([caseless(synthetic)], tmp_path / "b")
    assert empty.paths == () and {s.reason for s in empty.skipped} == {"no case in this run"}
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def test_two_runs_with_no_row_in_common_have_no_comparison(synthetic: RunRecord, tmp_path: Path) -> None:
    other = synthetic.model_copy(
        update={"cases": [c.model_copy(update={"scenario": "other"}) for c in synthetic.cases]}
    )
    written = fig_write.draw_comparison(compared(synthetic, other), synthetic, other, tmp_path)
    assert written.paths == ()
    (skipped,) = written.skipped
    assert (
        skipped.path == tmp_path / "comparison_ratio.png"
        and "no case and mode measured in both" in skipped.reason
    )


def test_cli_says_which_figures_it_left_out(tmp_path: Path) -> None:
    """A run whose every chain changes its sizes: the shape figure only, a line for each other one."""
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["plot", str(SHAPE_RUN), "-d", str(out), "--dpi", "40"])
    assert result.exit_code == 0, result.output
    assert [Path(line).name for line in result.stdout.splitlines()] == ["cost_vs_iterations_per_shape.png"]
    notes = result.stderr.splitlines()
    assert len(notes) == len(SINGLE_RUN_FILES)
    for note, stem in zip(notes, fig_write.FIGURES, strict=True):
        assert note == (
            f"launchbench: not writing {out / stem}.png: every chain of this run "
            "changes its sizes (see cost_vs_iterations_per_shape)"
        )
    quiet = CliRunner().invoke(cli, ["plot", str(SHAPE_RUN), "-d", str(out), "--dpi", "40", "-q"])
    assert quiet.exit_code == 0 and quiet.output == ""


# ------------------------------------------------------------------------------- chains at one length


def one_length_run(synthetic: RunRecord) -> RunRecord:
    """Each chain measured at one length, once per buffer size (as the scenario library is)."""
    cases = [
        case.model_copy(update={"case_id": f"{case.chain}/size={size}", "params": {"size": size}})
        for case in synthetic.cases
        if case.launches_per_iter == 100
        for size in (1000, 10**6)
    ]
    cases[-1] = not_capturable(cases[-1])
    return synthetic.model_copy(update={"cases": cases})


def test_chains_of_one_length_are_one_grouped_bar_chart(synthetic: RunRecord, tmp_path: Path) -> None:
    run = one_length_run(synthetic)
    expected = ["empty, size=1000 · 100 launches", "empty, size=1000000 · 100 launches",
                "scale, size=1000 · 100 launches", "scale, size=1000000 · 100 launches"]  # fmt: skip
    for name in ("wall_per_launch_vs_chain_length", "cpu_per_launch"):
        (ax,) = panel_axes(fig_write.FIGURES[name](run))
        assert [t.get_text() for t in ax.get_yticklabels()] == expected
        bars = Counter(c.get_label() for c in ax.containers if isinstance(c, BarContainer))
        assert bars == {fig_style.MODE_LABELS["eager"]: 4, fig_style.MODE_LABELS["graph"]: 3}
        assert ax.get_xscale() == "log" and "(µs)" in ax.get_xlabel()
        assert "graph: not capturable" in [t.get_text() for t in ax.texts]
    (speedup,) = panel_axes(fig_speedup.figure_speedup(run))
    assert sum(len(c.patches) for c in speedup.containers if isinstance(c, BarContainer)) == 3
    assert "speedup 1× (no gain)" in named_lines(speedup)
    (life,) = panel_axes(fig_lifecycle.figure_graph_lifecycle(run))
    assert {c.get_label() for c in life.containers if isinstance(c, BarContainer)} == {
        "capture",
        "instantiate",
        "upload",
    }
    assert all("pays back after" in t.get_text() for t in life.get_yticklabels()[:3])
    (spread,) = panel_axes(fig_distributions.figure_sample_distributions(run))
    assert box_count(spread) == 7  # a box per case and mode measured
    for path in fig_write.write_all_plots([run], tmp_path, dpi=50):
        check_image(path, width=400)


def test_one_length_chains_sit_under_the_swept_ones(synthetic: RunRecord) -> None:
    """A run with both: the swept chains in panels, the one-length ones in one bar chart under them."""
    single = [
        c.model_copy(update={"chain": "solo", "case_id": "solo/length=10"}) for c in synthetic.cases[1:2]
    ]
    run = synthetic.model_copy(update={"cases": [*synthetic.cases, *single]})
    axes = panel_axes(fig_modes.figure_wall_per_launch(run))
    assert [ax.get_title() for ax in axes] == ["empty", "scale", "chains measured at one length each"]
    assert [t.get_text() for t in axes[2].get_yticklabels()] == ["solo · 10 launches"]


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
    titles = [ax.get_title() for ax in panel_axes(fig_modes.figure_wall_per_launch(run))]
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
    assert [panel.key for panel in fig_panels.panels(fig_panels.plot_table(run))] == [
        ("quickstart", "empty", "")
    ]
    # builders: eager 6.5 µs per launch, graph 0.5 µs per launch + 1.6 µs per iteration
    assert fig_speedup.crossovers(run)[("quickstart", "empty", "")] == pytest.approx(1.6 / 6.0, rel=0.25)


# ---------------------------------------------------------------------------------------- crossover


def test_crossover_is_the_cost_model_line_fit(synthetic: RunRecord) -> None:
    found = fig_speedup.crossovers(synthetic)
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

    monkeypatch.setattr(fig_speedup, "fit_cost_model", fit_cost_model)
    found = fig_speedup.crossovers(synthetic)
    assert found[("quickstart", "empty", "")] == 42.0
    assert found[("quickstart", "scale", "")] is None
    assert "no crossover fitted" in fig_speedup._crossover_text(None, np.array(LENGTHS))
    (ax,) = panel_axes(fig_speedup.figure_speedup(synthetic))
    assert any(line.get_xdata()[0] == 42.0 for line in ax.lines if line.get_label() == "_crossover")


def test_a_graph_that_never_wins_says_so(synthetic: RunRecord) -> None:
    slow = scaled(synthetic, {(c.case_id, "graph"): 30.0 for c in synthetic.cases})
    assert all(v == float("inf") for v in fig_speedup.crossovers(slow).values())
    (ax,) = panel_axes(fig_speedup.figure_speedup(slow))
    assert all("graph never wins" in label for label in named_lines(ax)[:2])


# --------------------------------------------------------------------------------------- comparison


def compared(base: RunRecord, cur: RunRecord) -> Comparison:
    """The comparison `launchbench plot BASE CUR` draws (cli.plot.comparison_of)."""
    return comparison_of([base, cur], ("base", "cur"))


def drawn_verdicts(comparison: Comparison) -> dict[tuple[str, str], str]:
    return {
        (line.row.case, line.row.mode): line.metric.verdict for line in fig_comparison.ratio_lines(comparison)
    }


def test_the_comparison_figure_draws_the_comparison_it_is_given(synthetic: RunRecord) -> None:
    """Every row's ratio, CI and verdict are the given Comparison's: at compare's defaults what `plot`
    draws, and a comparison at another threshold is drawn with its own verdicts and band."""
    base = synthetic
    cur = scaled(make_run(seed=1), {("scale/length=100", "eager"): 1.2})
    default = compared(base, cur)
    expected = compare_runs(base, cur)
    assert drawn_verdicts(default) == {
        (row.case, row.mode): row.metric("wall_us_per_launch").verdict for row in expected.rows
    }
    assert {fig_comparison.interval_of(line) for line in fig_comparison.ratio_lines(default)} == {"bootstrap"}
    wide = compare_runs(base, cur, CompareSettings(metrics=DEFAULT_METRICS, default_threshold=0.5))
    assert drawn_verdicts(wide)[("scale/length=100", "eager")] != "slower"
    assert drawn_verdicts(default)[("scale/length=100", "eager")] == "slower"
    figure = fig_comparison.figure_comparison(wide, base, cur)
    legend = [text.get_text() for text in figure.legends[0].get_texts()]
    assert "±50% band" in legend and "same (change below the threshold)" in legend


def ab_sides(tmp_path: Path, cases: int | None = None) -> tuple[Path, Path]:
    """OUT/a and OUT/b of one ab run (of its first ``cases`` cases, where given): B's eager 10% slower;
    the host drifts alike in both sides' rounds, so only pairing round by round sees the change clearly."""
    drift = (1.0, 1.35, 1.0, 1.3)
    a = make_run(passes=4, eager_drift=drift).model_copy(
        update={"settings": Settings(ab=AbSettings(side="A"))}
    )
    b = scaled(make_run(seed=1, passes=4, eager_drift=drift), {(c.case_id, "eager"): 1.1 for c in a.cases})
    b = b.model_copy(update={"settings": Settings(ab=AbSettings(side="B"))})
    write_run(tmp_path / "out" / "a", a.model_copy(update={"cases": a.cases[:cases]}))
    write_run(tmp_path / "out" / "b", b.model_copy(update={"cases": b.cases[:cases]}))
    return tmp_path / "out" / "a", tmp_path / "out" / "b"


@pytest.fixture(scope="module")
def plotted_sides(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`launchbench plot A B/results.json --format svg` of the first two cases of an ab run's sides
    (one given as its folder, one as its file): the folder it drew into."""
    a_dir, b_dir = ab_sides(tmp_path_factory.mktemp("plotted"), cases=2)
    out = a_dir.parent.parent / "figs"
    args = ["plot", str(a_dir), str(b_dir / "results.json"), "-d", str(out), "--format", "svg"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return out


def test_the_sides_of_an_ab_run_are_paired_as_compare_pairs_them(tmp_path: Path, plotted_sides: Path) -> None:
    a_dir, b_dir = ab_sides(tmp_path)
    result = CliRunner().invoke(cli, ["compare", str(a_dir), str(b_dir), "--format", "json"])
    assert result.exit_code == 0, result.output
    verdicts = {
        (row["case"], row["mode"]): row["verdict"]
        for row in json.loads(result.stdout)["rows"]
        if row["metric"] == "wall_us_per_launch"
    }
    paired = comparison_of([load_run(a_dir), load_run(b_dir)], (str(a_dir), str(b_dir)))
    assert paired.paired and drawn_verdicts(paired) == verdicts
    assert {v for (_, mode), v in verdicts.items() if mode == "eager"} == {"slower"}
    unpaired = compare_runs(load_run(a_dir), load_run(b_dir))
    assert {v for (_, mode), v in drawn_verdicts(unpaired).items() if mode == "eager"} != {"slower"}
    svg = (plotted_sides / "comparison_ratio.svg").read_text()  # the sides' first two cases
    assert "paired round by round" in svg and "t interval over interleaved rounds (4 rows)" in svg


def test_comparison_counts_cases_of_a_scenario_only_one_run_has(synthetic: RunRecord) -> None:
    """A case id shared by two scenarios is still two cases (single-chain files all call theirs 'chain')."""
    renamed = [c.model_copy(update={"scenario": "other"}) for c in synthetic.cases[:2]]
    cur = synthetic.model_copy(update={"cases": [*renamed, *synthetic.cases[2:]]})
    figure = fig_comparison.figure_comparison(compared(synthetic, cur), synthetic, cur)
    assert "4 cases in only one run not shown" in figure_text(figure)


def test_comparison_colours_regressions_and_improvements(synthetic: RunRecord, tmp_path: Path) -> None:
    cur = scaled(make_run(seed=1), {("scale/length=100", "eager"): 1.2, ("empty/length=1000", "graph"): 0.8})
    comparison = compared(synthetic, cur)
    verdicts = drawn_verdicts(comparison)
    assert verdicts[("scale/length=100", "eager")] == "slower"
    assert verdicts[("empty/length=1000", "graph")] == "faster"
    assert verdicts[("empty/length=1", "graph")] == "same"
    fig = fig_comparison.figure_comparison(comparison, synthetic, cur)
    eager_ax, graph_ax = panel_axes(fig)
    for ax in (eager_ax, graph_ax):
        assert sum(len(c.lines[0].get_xdata()) for c in ax.containers) == len(synthetic.cases)
    colours = {c.get_label(): c.lines[0].get_color() for c in eager_ax.containers}
    assert colours[fig_comparison.verdicts(0.05)[0][1]] == fig_style.VERMILLION
    path = fig_style.save_figure(fig, tmp_path, fig_write.COMPARISON_FIGURE)
    assert path.name == "comparison_ratio.png"
    check_image(path)


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_plot_writes_into_the_run_directory(synthetic: RunRecord, tmp_path: Path) -> None:
    write_run(tmp_path / "run", small(synthetic))
    result = CliRunner().invoke(cli, ["plot", str(tmp_path / "run"), "--dpi", "50"])
    assert result.exit_code == 0, result.output
    printed = [Path(line) for line in result.output.splitlines()]
    assert {p.stem for p in printed} == SINGLE_RUN_FILES
    assert all(p.parent == tmp_path / "run" / "plots" and p.exists() for p in printed)


def test_figures_drawn_at_once_are_the_bytes_drawn_one_by_one(
    run: RunRecord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-j 3``: the table's rows (a worker for every 2 cases here) and the figures made in forked
    processes (the tables equal, every file the same bytes as ``-j 1`` draws, named in the same order);
    ``-j`` takes no negative count. Both drawn at 50 dpi: the bytes are compared, not the pixels
    (test_every_figure_renders_as_png checks the default dpi)."""
    monkeypatch.setattr(analysis_table, "CASES_PER_JOB", 2)
    pd.testing.assert_frame_equal(fig_panels.plot_table(run, jobs=3).rows, fig_panels.plot_table(run).rows)
    write_run(tmp_path / "run", run)
    printed = {}
    for jobs in ("1", "3"):
        out = tmp_path / f"j{jobs}"
        args = ["plot", str(tmp_path / "run"), "-d", str(out), "-j", jobs, "--dpi", "50"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        printed[jobs] = [Path(line).name for line in result.stdout.splitlines()]
        assert {Path(name).stem for name in printed[jobs]} == SINGLE_RUN_FILES
    assert printed["1"] == printed["3"]
    for name in printed["1"]:
        assert (tmp_path / "j3" / name).read_bytes() == (tmp_path / "j1" / name).read_bytes(), name
    bad = CliRunner().invoke(cli, ["plot", str(tmp_path / "run"), "-j", "-1"])
    assert bad.exit_code == 2 and "--jobs" in bad.output


def test_dpi_sets_the_pixels(synthetic: RunRecord, tmp_path: Path) -> None:
    """8 inches wide: 1600 px at the default 200 dpi, 800 at 100; the height in proportion."""
    fig = fig_speedup.figure_speedup(small(synthetic))
    default = png_size(fig_style.save_figure(fig, tmp_path / "a", "s"))
    half = png_size(fig_style.save_figure(fig, tmp_path / "b", "s", dpi=100))
    assert default[0] == 1600 and half[0] == 800
    assert abs(default[1] - 2 * half[1]) <= 2
    write_run(tmp_path / "run", small(synthetic))
    result = CliRunner().invoke(
        cli, ["plot", str(tmp_path / "run"), "-d", str(tmp_path / "c"), "--dpi", "60"]
    )
    assert result.exit_code == 0, result.output
    assert {png_size(Path(line))[0] for line in result.stdout.splitlines()} == {480}
    bad = CliRunner().invoke(cli, ["plot", str(tmp_path / "run"), "--dpi", "0"])
    assert bad.exit_code == 2 and "--dpi" in bad.output


def test_captions_name_the_interval_they_draw(
    run: RunRecord, real_figures: dict[str, Figure], synthetic: RunRecord
) -> None:
    for name in ("wall_per_launch_vs_chain_length", "cpu_per_launch"):
        assert fig_style.MEDIAN_CI in figure_text(real_figures[name])
    assert "order statistics, widened to the spread between passes" in fig_style.MEDIAN_CI
    assert "no interval drawn" in figure_text(real_figures["speedup_vs_chain_length"])
    assert "no interval drawn" in figure_text(real_figures["graph_lifecycle"])
    multi_pass = figure_text(fig_comparison.figure_comparison(compared(run, run), run, run))
    assert (
        f"t interval over passes ({2 * len(run.cases)} rows)" in multi_pass and "bootstrap" not in multi_pass
    )
    other = make_run(seed=1)
    one_pass = figure_text(fig_comparison.figure_comparison(compared(synthetic, other), synthetic, other))
    assert f"bootstrap of the medians, one pass ({2 * len(synthetic.cases)} rows)" in one_pass
    assert "t interval" not in one_pass


def test_the_plot_table_is_results_csvs_for_the_metrics_it_draws(run: RunRecord) -> None:
    full, mine = run_table(run), fig_panels.plot_table(run).rows
    levels = [c for c in full.columns if "_level" in c or c.endswith("_passes_apart")]
    drawn = [c for c in full.columns if c.startswith(fig_panels.PLOT_METRICS) and c not in levels]
    assert len(drawn) > 3 * 10  # each metric's median, CI and the other summary columns
    pd.testing.assert_frame_equal(mine[drawn], full[drawn])
    assert mine["latency_us"].isna().all() and full["latency_us"].notna().any()
    assert mine[levels].isna().all().all() and full[levels].notna().any().any()  # no figure draws levels


def test_cli_plot_two_runs_as_svg(plotted_sides: Path) -> None:
    """A run given as its folder and one as its results.json: a subfolder of figures each, and their
    comparison."""
    assert {p.name for p in plotted_sides.iterdir()} == {"a", "b", "comparison_ratio.svg"}
    for side in ("a", "b"):
        assert {p.name for p in (plotted_sides / side).iterdir()} == {f"{s}.svg" for s in SINGLE_RUN_FILES}


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


def test_a_figure_of_many_chains_draws_the_first_ones_and_says_how_many_it_left_out() -> None:
    """Past MAX_PANELS chains swept over length, a figure draws the first of them (a figure of hundreds
    of panels takes minutes and is taller than a PNG can be) and its subtitle names how many there were."""
    from launchbench.report.plots import bars as fig_bars

    base = make_run()
    count = fig_bars.MAX_PANELS + 3
    cases = [
        c.model_copy(update={"case_id": f"{c.case_id}/size={i}", "params": {**c.params, "size": i}})
        for i in range(count)
        for c in base.cases
    ]
    run = base.model_copy(update={"cases": cases})
    chains = len({(c.scenario, c.chain) for c in base.cases})
    fig = fig_modes.figure_wall_per_launch(run)
    assert len(panel_axes(fig)) == fig_bars.MAX_PANELS
    said = f"shown: the first {fig_bars.MAX_PANELS} of {count * chains} chains swept over length"
    assert said in figure_text(fig)
    assert "shown:" not in figure_text(fig_modes.figure_wall_per_launch(base))


def _four_panels(labels: list[str]) -> tuple[Figure, list[Axes]]:
    fig, axes = fig_style.panel_grid(4)
    for k, ax in enumerate(axes):
        ax.plot([1, 10, 100, 1000], [5.0, 0.7, 0.56, 0.55], label=labels[k % len(labels)])
        fig_style.log_axis(ax, "x")
        fig_style.log_axis(ax, "y", " µs")
        ax.set_xlabel("launches per chain")
        ax.set_ylabel("µs per launch, a long label")
        ax.set_title(f"panel {k}")
    return fig, axes


def test_finish_places_the_panels_where_tight_layout_with_the_body_as_rect_does() -> None:
    """style.finish lays the panels out on the body alone and moves them up by the header: the places, in
    inches, that one tight_layout with the header left out as its rect gives (which measures twice)."""
    labels = ["eager", "graph", "graph, captured once more"]
    fig, axes = _four_panels(labels)
    fig_style.finish(fig, "A title", "a subtitle\non two lines", *fig_style.collect_legend(axes), ncol=2)
    reference, ref_axes = _four_panels(labels)
    header = fig.get_figheight() - reference.get_figheight()
    reference.set_size_inches(fig.get_size_inches())
    reference.tight_layout(rect=(0, 0, 1, 1 - header / fig.get_figheight()), h_pad=1.2, w_pad=1.5)
    assert header > 0.9  # title, two subtitle lines and two legend rows
    for ax, ref in zip(axes, ref_axes, strict=True):
        assert np.allclose(ax.get_position().bounds, ref.get_position().bounds, rtol=0, atol=1e-9)


def test_a_finished_figure_is_saved_without_laying_it_out_again(tmp_path, monkeypatch) -> None:
    """finish leaves the figure with no layout engine (tight_layout leaves a placeholder one), so savefig
    draws the figure once, not once more first to lay it out (a sixth of `plot`'s CPU on the committed runs:
    results/speed/plot-trees-2026-12-07.json)."""
    fig, axes = _four_panels(["eager", "graph"])
    fig_style.finish(fig, "A title", "a subtitle", *fig_style.collect_legend(axes))
    assert fig.get_layout_engine() is None
    draws: list[object] = []
    original = type(fig).draw
    monkeypatch.setattr(
        type(fig), "draw", lambda self, renderer: draws.append(renderer) or original(self, renderer)
    )
    fig_style.save_figure(fig, tmp_path, "one", dpi=30)
    assert len(draws) == 1 and (tmp_path / "one.png").stat().st_size > 0


def test_a_refused_plot_loads_no_matplotlib(tmp_path):
    """A run that cannot be read is refused before matplotlib loads (about 0.6 s of a refusal's 0.9 s of
    CPU on the 2-core machine)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from launchbench.cli import main\n"
        f"sys.argv = ['launchbench', 'plot', {str(tmp_path / 'no-such-run')!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    print('exit', exit.code, 'matplotlib' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.stdout.strip() == "exit 2 False", (proc.stdout, proc.stderr)
    assert "no-such-run" in proc.stderr
