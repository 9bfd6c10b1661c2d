"""The speedup of graph replay over eager launch against chain length, with where the graph starts to win."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from launchbench.analysis.costmodel import fit_cost_model
from launchbench.report.plots.bars import BarSeries, bar_chart, split_one_point
from launchbench.report.plots.panels import LENGTH_LABEL, Panel, PlotTable, numbers, panels, table_of
from launchbench.report.plots.style import (
    BLACK,
    BLUE,
    SERIES_COLOURS,
    collect_legend,
    environment_line,
    finish,
    log_axis,
    no_data,
    panel_grid,
    sheet,
    styled,
)
from launchbench.results.schema import RunRecord


@dataclass(frozen=True)
class _ModelCrossover:
    scenario: str
    chain: str
    group: dict[str, Any]  # the non-length sweep values the fit is for ({} without a group column)
    crossover: float | None

    def fits(self, panel: Panel, params: Sequence[dict[str, Any]]) -> bool:
        """Whether the fit is the panel's; ``params``: its rows' parameters (``params`` parsed)."""
        if (self.scenario, self.chain) != (panel.scenario, panel.chain):
            return False
        if not self.group:
            return not panel.variant
        return all(p.get(k) == v for p in params for k, v in self.group.items())


def _model_crossovers(table: pd.DataFrame) -> list[_ModelCrossover] | None:
    """Crossovers from launchbench.analysis.costmodel.fit_cost_model (None when its table lacks a column)."""
    try:
        model = fit_cost_model(table)
        if "group" not in model:
            model = model.assign(group="{}")
        out = []
        for (scenario, chain, group), rows in model.groupby(["scenario", "chain", "group"], sort=False):
            values = numbers(rows, "crossover_launches")
            known = values[~np.isnan(values)]  # inf (graph never wins) is kept
            crossover = float(known[0]) if known.size else None
            out.append(_ModelCrossover(str(scenario), str(chain), json.loads(str(group or "{}")), crossover))
        return out
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


def crossovers(run: RunRecord, table: PlotTable | None = None) -> dict[tuple[str, str, str], float | None]:
    """Fitted crossover chain length per panel key (scenario, chain, variant), from the cost model.
    inf: the graph never wins; None: no fit for that panel."""
    table = table_of(run, table)
    model = _model_crossovers(table.rows)
    out: dict[tuple[str, str, str], float | None] = {}
    for panel in panels(table):
        params = [json.loads(p) for p in panel.rows["params"]] if model else []
        matches = [m for m in model or [] if m.fits(panel, params)]
        out[panel.key] = matches[0].crossover if len(matches) == 1 else None
    return out


def _crossover_text(cross: float | None, lengths: np.ndarray) -> str:
    if np.unique(lengths).size < 2:
        return "one length, no fit"
    if cross is None:
        return "no crossover fitted"
    if math.isinf(cross):
        return "graph never wins (fit)"
    if cross < max(1.0, float(lengths.min())):
        return f"graph wins at every length (fitted crossover ≈{cross:.2g} launches)"
    return f"graph wins above ≈{cross:.3g} launches (fit)"


def _speedup_lines(ax: Axes, lines: Sequence[Panel], cross: dict[tuple[str, str, str], float | None]) -> bool:
    """A line per chain swept over its length, its crossover marked; whether any crossover was drawn."""
    marked = False
    drawn = [(panel, rows) for panel in lines if not (rows := panel.mode_rows("graph", "speedup")).empty]
    for i, (panel, rows) in enumerate(drawn):
        colour = SERIES_COLOURS[i % len(SERIES_COLOURS)]
        x = numbers(rows, "launches_per_iter")
        c = cross.get(panel.key)
        ax.plot(x, numbers(rows, "speedup"), color=colour, marker="os^Dv<>p"[i % 8], markersize=5, linewidth=1.5,
                label=f"{panel.title}: {_crossover_text(c, x)}")  # fmt: skip
        if c is not None and max(1.0, x.min()) <= c <= 10 * x.max():  # inf never passes
            ax.axvline(c, color=colour, linestyle=":", linewidth=1.2)
            ax.plot([c], [1.0], marker="D", markersize=7, color=colour, markeredgecolor=BLACK, linestyle="none",
                    label="_crossover")  # fmt: skip
            marked = True
    without = [panel.title for panel in lines if panel.mode_rows("graph", "speedup").empty]
    if without:
        ax.text(0.99, 0.03, "no graph result: " + ", ".join(without), ha="right", va="bottom",
                transform=ax.transAxes, fontsize=7.5, color="#555555")  # fmt: skip
    ax.axhline(1.0, color=BLACK, linewidth=0.9, linestyle="--", label="speedup 1× (no gain)")
    ax.margins(x=0.08, y=0.15)
    log_axis(ax, "x")
    log_axis(ax, "y", "×")
    ax.set_xlabel(LENGTH_LABEL)
    ax.set_ylabel("speedup: eager / graph wall time per iteration (×)")
    return marked


SPEEDUP_BARS = (
    BarSeries("graph speedup (eager / graph wall time per iteration)", BLUE, "graph", "speedup", ci=False),
)


@styled
def figure_speedup(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """Graph speedup (eager / graph wall time per iteration) against chain length, crossovers marked;
    chains at one length each as bars."""
    table = table_of(run, table)
    split = split_one_point(panels(table))
    lines, points = split.lines, split.points
    lines = lines if any(not p.mode_rows("graph", "speedup").empty for p in lines) else []
    points = points if any(not p.mode_rows("graph", "speedup").empty for p in points) else []
    marked = False
    if not lines and not points:
        fig, axes = panel_grid(1, 3.6)
        no_data(axes[0], "no graph results in this run (not capturable or failed)")
    else:
        fig, axes, bar_ax = sheet(1 if lines else 0, len(points), 3.6)
        if lines:
            marked = _speedup_lines(axes[0], lines, crossovers(run, table))
        if bar_ax is not None:
            bar_chart(bar_ax, points, SPEEDUP_BARS, "speedup: eager / graph wall time per iteration (×)",
                       (1.0, "speedup 1× (no gain)"))  # fmt: skip
            axes.append(bar_ax)
    handles, labels = collect_legend(axes)
    if marked:
        handles.append(
            Line2D([], [], marker="D", markersize=7, color="white", markeredgecolor=BLACK, linestyle=":")
        )
        labels.append("fitted crossover: graph = eager (dotted line, chain's colour)")
    subtitle = f"{environment_line(run)}\nspeedup of the medians (no interval drawn; see the per-launch figures' CIs)"
    subtitle += split.note
    return finish(fig, "CUDA Graph speedup vs chain length", subtitle, handles, labels, ncol=1)
