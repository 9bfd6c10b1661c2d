"""Every raw sample of wall time per launch, per case and mode, as box plots: noise and outliers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from typing import Any

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from launchbench.analysis.stats import OUTLIER_MADS, outlier_mask
from launchbench.report.plots.bars import group_labels, lines_and_bars
from launchbench.report.plots.modes import missing_note
from launchbench.report.plots.panels import LENGTH_LABEL, Panel, PlotTable, table_of
from launchbench.report.plots.style import (
    BLACK,
    GREY,
    MODE_COLOURS,
    MODE_LABELS,
    environment_line,
    finish,
    fmt_number,
    styled,
)
from launchbench.results.schema import (
    MODES,
    CaseResult,
    RunRecord,
)


def _box_stats(values: np.ndarray, position: float) -> dict[str, Any]:
    """Box of samples as % deviation from their median; whiskers and outliers by the rule results.csv
    uses (stats.outlier_mask)."""
    median = float(np.median(values))
    pct = (values / median - 1) * 100
    far = outlier_mask(values)
    inside = pct[~far]
    q1, q3 = np.percentile(pct, [25, 75])
    return {"med": 0.0, "q1": q1, "q3": q3, "whislo": inside.min(), "whishi": inside.max(), "fliers": pct[far],
            "position": position, "median_us": median}  # fmt: skip


class Orientation(Enum):
    """Which way the boxes stand: VERTICAL (positions along x, values up y) or HORIZONTAL (the axes
    swapped: a box per chain, values along x)."""

    VERTICAL = "vertical"
    HORIZONTAL = "horizontal"


def _outlier_reach(boxes: list[dict[str, Any]]) -> float:
    """Half-height of the y axis (%): a little beyond the longest whisker, at least ±2%."""
    return max(2.0, *(max(abs(float(b["whislo"])), abs(float(b["whishi"]))) for b in boxes)) * 1.6


def _clip_outliers(
    ax: Axes, box: dict[str, Any], reach: float, colour: str, orientation: Orientation = Orientation.VERTICAL
) -> dict[str, Any]:
    """Keep the boxes readable: outliers beyond ±reach are not drawn but counted at the edge ('3↑')."""
    horizontal = orientation is Orientation.HORIZONTAL
    fliers = np.asarray(box["fliers"])
    at = float(box["position"])
    for count, edge, arrow in ((int((fliers > reach).sum()), reach, "→" if horizontal else "↑"),
                               (int((fliers < -reach).sum()), -reach, "←" if horizontal else "↓")):  # fmt: skip
        if count and horizontal:
            ax.text(edge, at, f"{count}{arrow}", ha="right" if edge > 0 else "left", va="center", fontsize=7,
                    color=colour)  # fmt: skip
        elif count:
            ax.text(at, edge, f"{count}{arrow}", ha="center", va="top" if edge > 0 else "bottom", fontsize=7,
                    color=colour)  # fmt: skip
    return {**box, "fliers": fliers[np.abs(fliers) <= reach]}


def _case_boxes(
    cases: dict[tuple[str, str], CaseResult], keys: Sequence[tuple[str, str]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """A box of each case's wall-per-launch samples per mode (eager at i − 0.2, graph at i + 0.2)."""
    boxes: list[dict[str, Any]] = []
    colours: list[str] = []
    for mode, offset in (("eager", -0.2), ("graph", 0.2)):
        for i, key in enumerate(keys):
            values = cases[key].metric_samples(mode, "wall_us_per_launch")
            values = values[np.isfinite(values) & (values > 0)]
            if values.size:
                boxes.append(_box_stats(values, i + offset))
                colours.append(MODE_COLOURS[mode])
    return boxes, colours


def _draw_boxes(
    ax: Axes,
    boxes: list[dict[str, Any]],
    colours: list[str],
    reach: float,
    orientation: Orientation = Orientation.VERTICAL,
) -> None:
    """Box plots drawn as a few collections per colour (the boxes as one, whiskers, caps and medians as
    another, outliers as one series): Axes.bxp makes six artists a box, seconds and a hundred MB for a
    thousand cases."""
    horizontal = orientation is Orientation.HORIZONTAL
    for colour in dict.fromkeys(colours):
        mine = [
            _clip_outliers(ax, box, reach, colour, orientation)
            for box, c in zip(boxes, colours, strict=True)
            if c == colour
        ]
        at = np.array([float(b["position"]) for b in mine])
        q1, q3 = (np.array([float(b[k]) for b in mine]) for k in ("q1", "q3"))
        rects = [
            [(x - 0.17, lo), (x + 0.17, lo), (x + 0.17, hi), (x - 0.17, hi)]
            for x, lo, hi in zip(at, q1, q3, strict=True)
        ]
        segments = _box_segments(mine, at)
        widths = [1.0] * (len(segments) - len(mine)) + [1.8] * len(mine)  # the medians last, thicker
        if horizontal:
            rects = [[(y, x) for x, y in rect] for rect in rects]
            segments = [[(y, x) for x, y in segment] for segment in segments]
        boxes_drawn = PolyCollection(rects, facecolors=colour + "55", edgecolors=colour, linewidths=1.0)
        boxes_drawn.set_label("_boxes")
        ax.add_collection(boxes_drawn, autolim=False)
        ax.add_collection(LineCollection(segments, colors=colour, linewidths=widths), autolim=False)
        fliers = [(x, v) for x, b in zip(at, mine, strict=True) for v in np.asarray(b["fliers"])]
        if fliers:
            xs, ys = np.array(fliers).T
            ax.plot(ys if horizontal else xs, xs if horizontal else ys, linestyle="none", marker=".",
                    markersize=3.5, color=colour, markeredgecolor="none", alpha=0.7, label="_outliers")  # fmt: skip


def _box_segments(boxes: list[dict[str, Any]], at: np.ndarray) -> list[list[tuple[float, float]]]:
    """Whiskers and caps of every box, then its median line, as (position, value) segments."""
    segments = []
    for x, b in zip(at, boxes, strict=True):
        lo, q1, q3, hi = (float(b[k]) for k in ("whislo", "q1", "q3", "whishi"))
        segments += [[(x, lo), (x, q1)], [(x, q3), (x, hi)], [(x - 0.085, lo), (x + 0.085, lo)],
                     [(x - 0.085, hi), (x + 0.085, hi)]]  # fmt: skip
    return segments + [[(x - 0.17, 0.0), (x + 0.17, 0.0)] for x in at]


def _percent(value: float, _: object = None) -> str:
    return f"{value:+g}%" if value else "0"


def _distribution_panel(ax: Axes, panel: Panel, cases: dict[tuple[str, str], CaseResult]) -> None:
    """A box per case and mode of the raw wall-time-per-launch samples, relative to the case's median."""
    ax.set_title(panel.title)
    order = panel.rows.drop_duplicates("case").sort_values("launches_per_iter")
    boxes, colours = _case_boxes(cases, [(panel.scenario, c) for c in order["case"]])
    reach = _outlier_reach(boxes) if boxes else 10.0
    _draw_boxes(ax, boxes, colours, reach)
    labels = [fmt_number(v) for v in order["launches_per_iter"]]
    if order["case"].size > len(set(labels)):
        labels = list(order["case"])
    ticks = range(0, len(labels), math.ceil(len(labels) / 12) if len(labels) > 24 else 1)  # a tick is 20 KB
    ax.set_xticks(ticks, [labels[i] for i in ticks], rotation=0 if len(order) <= 6 else 45)
    ax.set_xlim(-0.6, len(order) - 0.4)
    ax.grid(False, axis="x")
    ax.axhline(0, color=BLACK, linewidth=0.6)
    ax.set_xlabel(LENGTH_LABEL)
    ax.set_ylabel("deviation from the case's median (%)")
    ax.yaxis.set_major_formatter(FuncFormatter(_percent))
    label_medians = bool(boxes) and len(order) <= 6
    ax.set_ylim(-reach * (1.25 if label_medians else 1.0), reach)  # a band at the bottom for the medians
    if label_medians:
        _label_medians(ax, boxes, colours)
    note = missing_note(panel, "wall_us_per_launch")
    if note:
        ax.text(0.98, 0.96, note, ha="right", va="top", transform=ax.transAxes, fontsize=7.5, color="#555555")


def _distribution_groups(ax: Axes, groups: Sequence[Panel], cases: dict[tuple[str, str], CaseResult]) -> None:
    """Chains at one length each: a pair of horizontal boxes per chain (eager above, graph below),
    the medians in µs at the right edge."""
    keys = [(p.scenario, str(p.rows["case"].iloc[0])) for p in groups]
    boxes, colours = _case_boxes(cases, keys)
    boxes = [{**box, "position": len(groups) - 1 - float(box["position"])} for box in boxes]
    reach = _outlier_reach(boxes) if boxes else 10.0
    _draw_boxes(ax, boxes, colours, reach, Orientation.HORIZONTAL)
    for box, colour in zip(boxes, colours, strict=True):
        ax.annotate(f"{float(box['median_us']):.3g}", (1.0, float(box["position"])), xycoords=("axes fraction", "data"),
                    xytext=(-2, 0), textcoords="offset points", ha="right", va="center", fontsize=6.5, color=colour)  # fmt: skip
    ys = np.arange(len(groups), dtype=float)[::-1]
    ax.set_yticks(ys, group_labels(groups))
    ax.set_ylim(-0.6, len(groups) - 0.4)
    ax.set_xlim(-reach, reach * 1.3)  # a band at the right for the medians
    ax.grid(False, axis="y")
    ax.axvline(0, color=BLACK, linewidth=0.6)
    ax.set_xlabel("deviation from the case's median (%)")
    ax.set_title("chains measured at one length each")
    ax.xaxis.set_major_formatter(FuncFormatter(_percent))


def _label_medians(ax: Axes, boxes: list[dict[str, Any]], colours: list[str]) -> None:
    """Each box's median in µs, written under it, so the relative axis keeps its absolute scale."""
    for box, colour in zip(boxes, colours, strict=True):
        ax.annotate(f"{float(box['median_us']):.3g}", (float(box["position"]), 0), xycoords=("data", "axes fraction"),
                    xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=6.5, color=colour)  # fmt: skip


@styled
def figure_sample_distributions(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """Every raw sample of wall time per launch, per case and mode, as box plots: noise and outliers."""
    cases = {(c.scenario, c.case_id): c for c in run.cases}
    fig, axes, _, left_out = lines_and_bars(
        table_of(run, table),
        lambda ax, panel: _distribution_panel(ax, panel, cases),
        lambda ax, points: _distribution_groups(ax, points, cases),
    )
    handles: list[Artist] = [
        Patch(facecolor=MODE_COLOURS[m] + "55", edgecolor=MODE_COLOURS[m]) for m in MODES
    ]
    handles.append(Line2D([], [], color=GREY, marker=".", linestyle="none", markersize=6))
    labels = [*(MODE_LABELS[m] for m in MODES), f"outlier (> {OUTLIER_MADS:g} scaled MADs)"]
    subtitle = (
        environment_line(run)
        + "\nbox: quartiles · whiskers: furthest samples that are not outliers · numbers: median (µs per launch)"
        + left_out
    )
    return finish(fig, "Spread of wall time per launch, sample by sample", subtitle, handles, labels, ncol=3)
