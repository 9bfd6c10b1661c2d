"""Wall time per launch and CPU time per launch against chain length, eager vs graph (figures 1 and 3)."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from launchbench.report.plots.bars import BarSeries, bar_chart, lines_and_bars
from launchbench.report.plots.panels import LENGTH_LABEL, Panel, PlotTable, numbers, table_of
from launchbench.report.plots.style import (
    MEDIAN_CI,
    MODE_COLOURS,
    MODE_LABELS,
    MODE_MARKERS,
    collect_legend,
    environment_line,
    finish,
    log_axis,
    single_x,
    styled,
)
from launchbench.results.schema import (
    MODES,
    RunRecord,
)


def _mode_series(column: str) -> list[BarSeries]:
    return [BarSeries(MODE_LABELS[m], MODE_COLOURS[m], m, column) for m in MODES]


def missing_note(panel: Panel, column: str) -> str:
    notes = []
    for mode in MODES:
        rows = panel.rows[panel.rows["mode"] == mode]
        if len(rows) and not np.isfinite(numbers(rows, column)).any():
            status = str(rows["status"].iloc[0])
            notes.append(f"{mode}: {status.replace('_', ' ')}")
    return "; ".join(notes)


def _mode_panel(ax: Axes, panel: Panel, column: str) -> None:
    """Median of ``column`` per chain length, eager and graph, with the median's 95% CI as error bars."""
    for mode in MODES:
        rows = panel.mode_rows(mode, column)
        if rows.empty:
            continue
        x = numbers(rows, "launches_per_iter")
        y = numbers(rows, column)
        low = np.nan_to_num(y - numbers(rows, f"{column}_ci_low")).clip(0)
        high = np.nan_to_num(numbers(rows, f"{column}_ci_high") - y).clip(0)
        ax.errorbar(
            x, y, yerr=np.vstack([low, high]), label=MODE_LABELS[mode], color=MODE_COLOURS[mode],
            marker=MODE_MARKERS[mode], markersize=4.5, linestyle="-" if panel.varying_length else "none",
            linewidth=1.4, capsize=3, elinewidth=1,
        )  # fmt: skip
    note = missing_note(panel, column)
    if note:
        ax.text(
            0.98, 0.04, note, ha="right", va="bottom", transform=ax.transAxes, fontsize=7.5, color="#555555"
        )
    ax.set_title(panel.title)
    ax.margins(x=0.08, y=0.12)
    if np.isfinite(numbers(panel.rows, column)).any():
        single_x(ax, numbers(panel.rows, "launches_per_iter"))
        log_axis(ax, "x")
        log_axis(ax, "y")


def _mode_figure(run: RunRecord, table: PlotTable | None, column: str, title: str, ylabel: str) -> Figure:
    def draw_panel(ax: Axes, panel: Panel) -> None:
        _mode_panel(ax, panel, column)
        ax.set_xlabel(LENGTH_LABEL)
        ax.set_ylabel(ylabel)

    fig, axes, _, left_out = lines_and_bars(
        table_of(run, table),
        draw_panel,
        lambda ax, points: bar_chart(ax, points, _mode_series(column), ylabel),
    )
    handles, labels = collect_legend(axes)
    subtitle = f"{environment_line(run)}\n{MEDIAN_CI}{left_out}"
    return finish(fig, title, subtitle, handles, labels)


@styled
def figure_wall_per_launch(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """Headline: wall time per launch against chain length, eager vs graph, one panel per chain (chains
    at one length each: one grouped bar chart). ``table``: plot_table(run), when the caller has it."""
    return _mode_figure(
        run, table, "wall_us_per_launch", "Wall time per launch vs chain length", "wall time per launch (µs)"
    )


@styled
def figure_cpu_per_launch(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """The launching thread's CPU time per launch, eager vs graph: the CPU a graph frees."""
    return _mode_figure(
        run,
        table,
        "cpu_us_per_launch",
        "CPU time per launch: what a CUDA Graph frees",
        "launching CPU time per launch (µs)",
    )
