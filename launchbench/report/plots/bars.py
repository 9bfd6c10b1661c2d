"""Chains measured at one length each, drawn together as one grouped bar chart under a figure's panels."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from launchbench.report.plots.panels import Panel, PlotTable, numbers, panels
from launchbench.report.plots.style import BLACK, fmt_number, log_axis, no_data, panel_grid, sheet
from launchbench.results.schema import MEASURED_STATUSES

MAX_PANELS = 12  # panels swept over chain length in one figure: 6 rows, about 18 inches tall
MAX_GROUPS = 40  # chains at one length in one grouped bar chart


@dataclass(frozen=True)
class Split:
    """The panels a figure draws: those swept over chain length (a panel each) and the chains measured
    at one length (one grouped bar chart: a panel of one point says less than a bar among its peers),
    each the first MAX_PANELS / MAX_GROUPS of them; ``note`` says how many were left out ('' if none)."""

    lines: list[Panel]
    points: list[Panel]
    note: str


def split_one_point(groups: Sequence[Panel]) -> Split:
    lines = [p for p in groups if p.varying_length]
    points = [p for p in groups if not p.varying_length]
    parts = [
        f"the first {limit} of {len(items)} {what}"
        for items, limit, what in ((lines, MAX_PANELS, "chains swept over length"), (points, MAX_GROUPS, "chains at one length"))
        if len(items) > limit
    ]  # fmt: skip
    note = f"\nshown: {' and '.join(parts)} (every row is in results.csv)" if parts else ""
    return Split(lines[:MAX_PANELS], points[:MAX_GROUPS], note)


@dataclass(frozen=True)
class BarSeries:
    """One bar of every group: ``column`` of the ``mode`` row, with the median's CI when ``ci``."""

    label: str
    colour: str
    mode: str
    column: str
    ci: bool = True

    def value(self, panel: Panel) -> tuple[float, float, float] | None:
        """(median, CI low, CI high) of the panel's one row of the mode, None when it has no value."""
        rows = panel.mode_rows(self.mode, self.column)
        if rows.empty:
            return None
        mid = float(numbers(rows, self.column)[0])
        if not self.ci:
            return mid, mid, mid
        low, high = (float(numbers(rows, f"{self.column}_ci_{end}")[0]) for end in ("low", "high"))
        return mid, low if math.isfinite(low) else mid, high if math.isfinite(high) else mid

    def missing(self, panel: Panel) -> str:
        """Why the mode has no bar ('graph: not capturable'); empty when it was measured."""
        rows = panel.mode_rows(self.mode)
        if len(rows) and str(rows["status"].iloc[0]) in MEASURED_STATUSES:
            return ""
        status = str(rows["status"].iloc[0]).replace("_", " ") if len(rows) else "not measured"
        return f"{self.mode}: {status}"


def group_label(panel: Panel, several_scenarios: bool, note: str = "") -> str:
    """The chain (its scenario's name too where the figure has several), its parameters and its one
    length, with ``note`` on a second line; shorter than the panel title (no kernel kinds)."""
    label = f"{panel.scenario}: {panel.chain}" if several_scenarios else panel.chain
    label += f", {panel.variant}" if panel.variant else ""
    lengths = panel.rows["launches_per_iter"].dropna()
    label += f" · {fmt_number(float(lengths.iloc[0]))} launches" if len(lengths) else ""
    return f"{label}\n{note}" if note else label


def group_labels(groups: Sequence[Panel], notes: Sequence[str] = ()) -> list[str]:
    several = len({p.scenario for p in groups}) > 1
    return [group_label(p, several, n) for p, n in zip(groups, notes or [""] * len(groups), strict=True)]


def bar_chart(
    ax: Axes,
    groups: Sequence[Panel],
    series: Sequence[BarSeries],
    xlabel: str,
    reference: tuple[float, str] | None = None,
    notes: Sequence[str] = (),
) -> None:
    """A group of horizontal bars per chain (first on top), a bar per series at its median with the
    CI as error bars, the value written at the bar's end; log scale. ``reference``: (x, label) of a
    dashed line the axis keeps in view (speedup 1×); ``notes``: a second line under each group's label."""
    ys = np.arange(len(groups), dtype=float)[::-1]
    height = 0.8 / len(series)
    ends: list[float] = []
    noted: set[tuple[int, str]] = set()  # (group, mode) whose missing value is said once
    for j, one in enumerate(series):
        ends += _series_bars(ax, ys + ((len(series) - 1) / 2 - j) * height, height, one, groups, noted)
    ax.set_yticks(ys, group_labels(groups, notes))
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.grid(False, axis="y")
    ax.set_xlabel(xlabel)
    ax.set_title("chains measured at one length each")
    finite = [v for v in ends if math.isfinite(v) and v > 0]
    if reference is not None:
        ax.axvline(reference[0], color=BLACK, linewidth=0.9, linestyle="--", label=reference[1])
        finite.append(reference[0])
    if finite:
        ax.set_xscale("log")
        ax.set_xlim(min(finite) / 2, max(finite) * 3)
        log_axis(ax, "x", "×" if reference is not None else "")


def _series_bars(
    ax: Axes,
    ys: np.ndarray,
    height: float,
    one: BarSeries,
    groups: Sequence[Panel],
    noted: set[tuple[int, str]],
) -> list[float]:
    """One series' bar in every group (at ``ys``), or the reason it has none; the CI ends drawn."""
    ends: list[float] = []
    for i, (y, panel) in enumerate(zip(ys, groups, strict=True)):
        value = one.value(panel)
        if value is None:
            why = one.missing(panel)
            if why and (i, one.mode) not in noted:
                noted.add((i, one.mode))
                ax.text(0.005, y, why, transform=ax.get_yaxis_transform(), va="center", fontsize=6.5,
                        color="#555555")  # fmt: skip
            continue
        mid, low, high = value
        ax.barh(y, mid, height * 0.92, color=one.colour, label=one.label,
                xerr=[[max(mid - low, 0)], [max(high - mid, 0)]] if one.ci else None,
                error_kw={"elinewidth": 0.9, "capsize": 2, "ecolor": BLACK})  # fmt: skip
        ax.annotate(_value_text(mid), (high, y), xytext=(3, 0), textcoords="offset points", va="center",
                    fontsize=6.5, color="#333333")  # fmt: skip
        ends += [low, high]
    return ends


def _value_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def lines_and_bars(
    table: PlotTable,
    draw_panel: Callable[[Axes, Panel], Any],
    draw_groups: Callable[[Axes, list[Panel]], None],
) -> tuple[Figure, list[Axes], list[Any], str]:
    """A figure's sheet: a panel per chain swept over its length (``draw_panel``; what it returns is
    returned) and one axes across the width for the chains at one length (``draw_groups``); a note
    instead when the run has no chain of fixed sizes. Last: the line for the subtitle that says which
    panels were left out (split_one_point), '' when none were."""
    split = split_one_point(panels(table))
    lines, points = split.lines, split.points
    if not lines and not points:
        fig, axes = panel_grid(1)
        no_data(axes[0], "no chain of fixed sizes in this run")
        return fig, axes, [], ""
    fig, axes, bar_ax = sheet(len(lines), len(points))
    drawn = [draw_panel(ax, panel) for ax, panel in zip(axes, lines, strict=True)]
    if bar_ax is not None:
        draw_groups(bar_ax, points)
        axes.append(bar_ax)
    return fig, axes, drawn, split.note
