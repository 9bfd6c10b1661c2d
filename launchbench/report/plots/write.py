"""Which figures a run gets, which are left out (and why), and writing them into a folder."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from launchbench.errors import LaunchbenchError
from launchbench.forked import forked_map
from launchbench.report.plots.distributions import figure_sample_distributions
from launchbench.report.plots.lifecycle import figure_graph_lifecycle
from launchbench.report.plots.modes import figure_cpu_per_launch, figure_wall_per_launch
from launchbench.report.plots.panels import Panel, PlotTable, has_shape_changes, numbers, panels, plot_table
from launchbench.report.plots.shapes import figure_shape_changes, shape_panels
from launchbench.report.plots.speedup import figure_speedup
from launchbench.report.plots.style import DPI, FORMATS, save_figure
from launchbench.results.schema import RunRecord

if TYPE_CHECKING:
    from launchbench.analysis.compare import Comparison

FIGURES: dict[str, Callable[[RunRecord], Figure]] = {
    "wall_per_launch_vs_chain_length": figure_wall_per_launch,
    "speedup_vs_chain_length": figure_speedup,
    "cpu_per_launch": figure_cpu_per_launch,
    "graph_lifecycle": figure_graph_lifecycle,
    "sample_distributions": figure_sample_distributions,
}

COMPARISON_FIGURE = "comparison_ratio"

SHAPE_FIGURE = "cost_vs_iterations_per_shape"  # drawn for a run that holds a chain whose sizes change


@dataclass(frozen=True)
class SkippedFigure:
    """A figure not written because it would show nothing, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class PlotsWritten:
    paths: tuple[Path, ...]
    skipped: tuple[SkippedFigure, ...] = ()


def _has_value(groups: Sequence[Panel], mode: str | None, column: str) -> bool:
    rows = [p.rows if mode is None else p.rows[p.rows["mode"] == mode] for p in groups]
    return any(np.isfinite(numbers(r, column)).any() for r in rows)


def empty_reason(stem: str, table: PlotTable) -> str | None:
    """Why the single-run figure ``stem`` would show nothing for this table, or None when it has data."""
    groups = panels(table)
    if stem == SHAPE_FIGURE:
        return None if shape_panels(table) else "no chain whose sizes change in this run"
    if not groups:
        rows = table.rows
        shaped = "iterations_per_shape" in rows and bool(rows["iterations_per_shape"].notna().any())
        return (
            f"every chain of this run changes its sizes (see {SHAPE_FIGURE})"
            if shaped
            else "no case in this run"
        )
    needs = {
        "wall_per_launch_vs_chain_length": (None, "wall_us_per_launch", "no wall time measured"),
        "cpu_per_launch": (None, "cpu_us_per_launch", "no CPU time measured"),
        "speedup_vs_chain_length": ("graph", "speedup", "no graph result (not capturable or failed)"),
        "graph_lifecycle": ("graph", "setup_us", "no graph was captured (not capturable or failed)"),
        "sample_distributions": (None, "wall_us_per_launch", "no wall time samples"),
    }
    mode, column, reason = needs[stem]
    return None if _has_value(groups, mode, column) else reason


@dataclass(frozen=True)
class FigureJob:
    """What every figure of one run's drawing needs: the run, its table, where and how to save. Its
    ``draw`` is what launchbench.forked.forked_map runs in each forked process (or here, with one job):
    the child has the run and the table without copying them and sends back the path."""

    run: RunRecord
    table: PlotTable
    out_dir: Path
    fmt: str
    dpi: int

    def draw(self, figure: tuple[str, Callable[..., Figure]]) -> Path:
        """One figure (stem, builder) built and saved; its reference cycles freed before the next."""
        stem, build = figure
        path = save_figure(build(self.run, self.table), self.out_dir, stem, self.fmt, self.dpi)
        gc.collect()  # a figure is a web of reference cycles: free one before drawing the next
        return path


def draw_run_plots(
    run: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI, jobs: int = 1
) -> PlotsWritten:
    """The single-run figures of ``run`` that have something to show, in ``out_dir``: the five of
    FIGURES, the shape-change figure when the run holds a chain whose sizes change, and the floor
    figure (floor.fmt) when it holds floor cases. ``jobs``: how many figures are drawn at once, each in
    a process forked from this one (FigureJob.draw; 1: one by one in this process), and the table's
    rows made so too (plot_table)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    table = plot_table(run, jobs)
    builders: dict[str, Callable[..., Figure]] = dict(FIGURES)
    if has_shape_changes(run):
        builders[SHAPE_FIGURE] = figure_shape_changes
    reasons = {stem: empty_reason(stem, table) for stem in builders}
    drawn = [(stem, build) for stem, build in builders.items() if reasons[stem] is None]
    paths = forked_map(FigureJob(run, table, out_dir, fmt, dpi).draw, drawn, jobs)
    skipped = [
        SkippedFigure(out_dir / f"{stem}.{fmt}", reason)
        for stem, reason in reasons.items()
        if reason is not None
    ]
    if any(case.kinds == "floor" for case in run.cases):  # a floor run, or a run with a floor: block
        _draw_floor(run, out_dir, fmt, dpi, paths, skipped)
    return PlotsWritten(tuple(paths), tuple(skipped))


def _draw_floor(
    run: RunRecord, out_dir: Path, fmt: str, dpi: int, paths: list[Path], skipped: list[SkippedFigure]
) -> None:
    """The floor figure of a run's floor cases, added to ``paths`` (or its reason to ``skipped``)."""
    from launchbench.report.floor import floor_report
    from launchbench.report.plots.floor import STEM, draw_floor_figure

    floor = draw_floor_figure(floor_report(run), out_dir, fmt, dpi)
    if floor is not None:
        paths.append(floor)
    else:
        skipped.append(SkippedFigure(out_dir / f"{STEM}.{fmt}", "no floor layer measured an eager cost"))


def write_run_plots(run: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI) -> list[Path]:
    """draw_run_plots' files."""
    return list(draw_run_plots(run, out_dir, fmt, dpi).paths)


def draw_comparison(
    comparison: Comparison, base: RunRecord, cur: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI
) -> PlotsWritten:
    """comparison_ratio.fmt in ``out_dir``: ``comparison`` (of ``base`` and ``cur``) drawn, unless it has
    no row compared on wall time per launch."""
    from launchbench.report.plots.comparison import figure_comparison, ratio_lines  # loads the statistics

    if not ratio_lines(comparison):
        reason = "the runs have no case and mode measured in both"
        return PlotsWritten((), (SkippedFigure(Path(out_dir) / f"{COMPARISON_FIGURE}.{fmt}", reason),))
    fig = figure_comparison(comparison, base, cur)
    return PlotsWritten((save_figure(fig, Path(out_dir), COMPARISON_FIGURE, fmt, dpi),))


def _safe_name(label: str) -> str:
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label).strip("._")
    return name or "run"


def write_all_plots(
    runs: Sequence[RunRecord],
    out_dir: Path,
    fmt: str = "png",
    labels: Sequence[str] | None = None,
    dpi: int = DPI,
    comparison: Comparison | None = None,
) -> list[Path]:
    """draw_plots' files."""
    return list(draw_plots(runs, out_dir, fmt, labels, dpi, comparison).paths)


def draw_plots(
    runs: Sequence[RunRecord],
    out_dir: Path,
    fmt: str = "png",
    labels: Sequence[str] | None = None,
    dpi: int = DPI,
    comparison: Comparison | None = None,
    jobs: int = 1,
) -> PlotsWritten:
    """Every figure with something to show: one run's in ``out_dir``; several runs' each in a subfolder
    (named by ``labels``, else run1, run2, ...), plus ``comparison_ratio`` in ``out_dir`` when there are
    two and their ``comparison`` (second run / first, as `launchbench compare` makes it) is given. The
    figures left out are named with the reason. ``jobs``: a run's figures drawn at most that many at
    once, each in a forked process (1: one by one in this process)."""
    out_dir = Path(out_dir)
    try:  # an unknown fmt is refused before anything is written
        return _draw_plots(runs, out_dir, fmt, labels, dpi, comparison, jobs)
    except (
        OSError
    ) as err:  # a full disk, a read-only folder: the user's to fix, for `plot` and `run --plot` alike
        raise LaunchbenchError(f"cannot write figures to {out_dir}: {err}") from None


def _draw_plots(
    runs: Sequence[RunRecord],
    out_dir: Path,
    fmt: str,
    labels: Sequence[str] | None,
    dpi: int,
    comparison: Comparison | None,
    jobs: int,
) -> PlotsWritten:
    if len(runs) == 1:
        return draw_run_plots(runs[0], out_dir, fmt, dpi, jobs)
    names = [_safe_name(s) for s in labels] if labels else [f"run{i + 1}" for i in range(len(runs))]
    if len(names) != len(runs) or len(set(names)) != len(names):
        names = [f"run{i + 1}_{name}" for i, name in enumerate(names[: len(runs)])]
        names += [f"run{i + 1}" for i in range(len(names), len(runs))]
    parts = [
        draw_run_plots(run, out_dir / name, fmt, dpi, jobs) for run, name in zip(runs, names, strict=True)
    ]
    if len(runs) == 2 and comparison is not None:
        parts.append(draw_comparison(comparison, runs[0], runs[1], out_dir, fmt, dpi))
    return PlotsWritten(
        tuple(p for part in parts for p in part.paths), tuple(s for part in parts for s in part.skipped)
    )
