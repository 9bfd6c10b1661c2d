"""Chains whose sizes change: cost per iteration against the iterations per shape, with the cost model's curves."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from launchbench.analysis.costmodel import ShapeCost, fit_shape_model, length_axes
from launchbench.report.plots.bars import MAX_PANELS
from launchbench.report.plots.panels import PlotTable, numbers, table_of, variant_text
from launchbench.report.plots.style import (
    BLACK,
    GREY,
    MEDIAN_CI,
    MODE_COLOURS,
    MODE_LABELS,
    MODE_MARKERS,
    collect_legend,
    environment_line,
    finish,
    log_axis,
    no_data,
    panel_grid,
    single_x,
    styled,
)
from launchbench.results.schema import (
    ALL_MODES,
    RunRecord,
)

SHAPE_LABEL = "iterations per shape (before the size changes)"


@dataclass(frozen=True)
class ShapePanel:
    """The rows of one chain whose sizes change, at one value of the parameters other than the
    iterations per shape, with the cost model's fits for them (``fits`` rows of fit_shape_model)."""

    title: str
    rows: pd.DataFrame
    fits: pd.DataFrame


def shape_panels(table: PlotTable) -> list[ShapePanel]:
    """A panel per chain whose sizes change and value of its parameters other than the iterations per
    shape, with the cost model's fits of that group."""
    if "iterations_per_shape" not in table.rows:
        return []
    shaped = table.rows[table.rows["iterations_per_shape"].notna()]
    if shaped.empty:
        return []
    model = fit_shape_model(table.rows)
    several = shaped["scenario"].nunique() > 1
    out = []
    for (scenario, chain), group in shaped.groupby(["scenario", "chain"], sort=False):
        params = table.params_of(group)
        axes = length_axes(list(params), [int(v) for v in group["iterations_per_shape"]])
        fixed = params.map(lambda p, a=axes: {k: v for k, v in p.items() if k not in a})
        keys = fixed.map(lambda f: json.dumps(f, sort_keys=True))  # the cost model's group key
        for key, rows in group.groupby(keys, sort=False):
            fits = model[
                (model["scenario"] == scenario) & (model["chain"] == chain) & (model["group"] == key)
            ]
            shown = fixed[rows.index[0]]
            distinct = int(rows["distinct_shapes"].iloc[0])
            title = f"{scenario}: {chain}" if several else str(chain)
            title += f", {distinct} shapes" + (f", {variant_text(shown, sorted(shown))}" if shown else "")
            out.append(ShapePanel(title, rows, fits))
    return out


def _wins_text(fits: pd.DataFrame) -> list[tuple[float, str]]:
    """Where the fastest strategy changes (iterations per shape above 1), with a label for each."""
    marks = []
    for _, fit in fits.sort_values("wins_from_iters_per_shape").iterrows():
        low = fit["wins_from_iters_per_shape"]
        if pd.notna(low) and low > 1.0:
            marks.append((float(low), f"{fit['mode']} fastest above {low:.3g}"))
    return marks


def _shape_panel(ax: Axes, panel: ShapePanel) -> None:
    """Median wall time per iteration per mode against iterations per shape (the median's 95% CI as bars),
    the cost model's curves max(gpu_bound, host + per_change / k), and where the fastest strategy changes."""
    xs = numbers(panel.rows, "iterations_per_shape")
    for mode in ALL_MODES:
        rows = panel.rows[panel.rows["mode"] == mode].sort_values("iterations_per_shape")
        rows = rows[np.isfinite(numbers(rows, "wall_us_per_iter"))]
        if rows.empty:
            continue
        x = numbers(rows, "iterations_per_shape")
        y = numbers(rows, "wall_us_per_iter")
        low = np.nan_to_num(y - numbers(rows, "wall_us_per_iter_ci_low")).clip(0)
        high = np.nan_to_num(numbers(rows, "wall_us_per_iter_ci_high") - y).clip(0)
        ax.errorbar(x, y, yerr=np.vstack([low, high]), label=MODE_LABELS[mode], color=MODE_COLOURS[mode],
                    marker=MODE_MARKERS[mode], markersize=4.5, linestyle="none", capsize=3, elinewidth=1)  # fmt: skip
        fit = panel.fits[panel.fits["mode"] == mode]
        if len(fit):
            cost = ShapeCost(*(float(fit[c].iloc[0]) for c in ("gpu_bound_us", "host_us", "per_change_us")))
            grid = np.geomspace(max(1.0, np.nanmin(xs) / 1.5), np.nanmax(xs) * 1.5, 120)
            ax.plot(grid, cost.at(grid), color=MODE_COLOURS[mode], linewidth=1.2, label="_fit")
            beats = float(pd.to_numeric(fit["beats_eager_above_iters_per_shape"], errors="coerce").iloc[0])
            if math.isfinite(beats) and max(grid[0], 1.0) < beats <= grid[-1]:
                ax.plot([beats], [float(cost.at(beats))], marker="X", markersize=8, color=MODE_COLOURS[mode],
                        markeredgecolor=BLACK, linestyle="none", label="_beats")  # fmt: skip
    for k, text in _wins_text(panel.fits):
        if k <= np.nanmax(xs) * 10:
            ax.axvline(k, color=GREY, linestyle=":", linewidth=1.2)
            ax.text(k, 0.97, f" {text}", transform=ax.get_xaxis_transform(), rotation=90, va="top",
                    ha="left", fontsize=7, color="#444444")  # fmt: skip
    ax.set_title(panel.title)
    ax.margins(x=0.08, y=0.12)
    if np.isfinite(numbers(panel.rows, "wall_us_per_iter")).any():
        single_x(ax, xs)
        log_axis(ax, "x")
        log_axis(ax, "y")


@styled
def figure_shape_changes(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """Chains whose sizes change: cost per iteration of eager and each graph strategy against the
    iterations per shape, with the cost model's curves and the crossovers where the fastest one changes."""
    every = shape_panels(table_of(run, table))
    groups = every[:MAX_PANELS]
    fig, axes = panel_grid(len(groups), 3.4)
    for ax, panel in zip(axes, groups, strict=False):
        _shape_panel(ax, panel)
    if not groups:
        no_data(axes[0], "no chain whose sizes change in this run")
    for ax in axes:
        ax.set_xlabel(SHAPE_LABEL)
        ax.set_ylabel("wall time per iteration (µs)")
    handles, labels = collect_legend(axes)
    if labels:
        handles += [Line2D([], [], color=GREY, linewidth=1.2),
                    Line2D([], [], color=GREY, marker="X", markeredgecolor=BLACK, linestyle="none"),
                    Line2D([], [], color=GREY, linestyle=":", linewidth=1.2)]  # fmt: skip
        labels += ["lines: model, max(GPU, host + per change / k)", "✕: model crosses eager",
                   "dotted: the fastest strategy changes"]  # fmt: skip
    subtitle = f"{environment_line(run)}\n{MEDIAN_CI}\nsetup paid at a change spread over k iterations"
    if len(every) > MAX_PANELS:
        subtitle += f"\nshown: the first {MAX_PANELS} of {len(every)} chains (every row is in results.csv)"
    return finish(fig, "Sizes that change: cost per iteration vs iterations per shape", subtitle, handles,
                   labels, ncol=2)  # fmt: skip
