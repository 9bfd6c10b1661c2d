"""The graph's life cycle: capture, instantiate and upload, and the iterations that pay them back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from launchbench.report.plots.bars import BarSeries, bar_chart, lines_and_bars
from launchbench.report.plots.panels import Panel, PlotTable, numbers, table_of
from launchbench.report.plots.style import (
    BLACK,
    ORANGE,
    STAGE_COLOURS,
    collect_legend,
    environment_line,
    finish,
    log_axis,
    no_data,
    single_x,
    styled,
)
from launchbench.results.schema import RunRecord

STAGES = (("capture_us", "capture"), ("instantiate_us", "instantiate"), ("upload_us", "upload"))


def _no_graph_text(panel: Panel) -> str:
    rows = panel.mode_rows("graph")
    if rows.empty:
        return "no graph measured"
    status = str(rows["status"].iloc[0]).replace("_", " ")
    reason = str(rows["reason"].iloc[0] or "")
    reason = reason if len(reason) <= 40 else reason[:39] + "…"
    return f"graph {status}" + (f":\n{reason}" if reason else "")


def _lifecycle_panel(ax: Axes, panel: Panel) -> Axes | None:
    """Capture, instantiate, upload (µs) against graph nodes; break-even replays on a second axis."""
    rows = panel.mode_rows("graph", "setup_us")
    ax.set_title(panel.title)
    if rows.empty:
        no_data(ax, _no_graph_text(panel))
        return None
    nodes = numbers(rows, "graph_nodes")
    x = nodes if np.isfinite(nodes).all() else numbers(rows, "launches_per_iter")
    ax.set_xlabel("graph nodes" if x is nodes else "launches per iteration (node count not recorded)")
    style = "-" if len(np.unique(x)) > 1 else "none"
    split = bool(np.isfinite(numbers(rows, "instantiate_us")).any())
    for column, stage in STAGES:
        y = numbers(rows, column)
        if not np.isfinite(y).any():
            continue
        label = stage if split or stage != "capture" else "capture + instantiate (not split)"
        ax.plot(x, y, color=STAGE_COLOURS[stage], marker="o", markersize=4, linestyle=style, label=label)
    ax.set_ylabel("time (µs)")
    ax.margins(x=0.08, y=0.12)
    single_x(ax, x)
    log_axis(ax, "x")
    log_axis(ax, "y")
    return _break_even_axis(ax, x, numbers(rows, "break_even_iters"), style)


def _break_even_axis(ax: Axes, x: np.ndarray, iters: np.ndarray, style: str) -> Axes | None:
    ok = np.isfinite(iters) & (iters > 0)
    if not ok.any():
        ax.text(0.98, 0.04, "graph not faster: no break-even", ha="right", va="bottom", transform=ax.transAxes,
                fontsize=7.5, color="#555555")  # fmt: skip
        return None
    twin = ax.twinx()
    twin.set_label("break-even")
    twin.grid(False)
    twin.spines["right"].set_visible(True)
    twin.plot(x[ok], iters[ok], color=BLACK, marker="x", markersize=5, linestyle="--" if style == "-" else "none",
              linewidth=1.1, label="break-even replays (right axis)")  # fmt: skip
    twin.set_ylabel("break-even replays (iterations)")
    twin.margins(y=0.15)
    log_axis(twin, "y")
    return twin


def _break_even_note(panel: Panel) -> str:
    rows = panel.mode_rows("graph", "break_even_iters")
    if rows.empty:
        return "graph not faster: no break-even" if not panel.mode_rows("graph", "setup_us").empty else ""
    return f"pays back after {float(numbers(rows, 'break_even_iters')[0]):.3g} replays"


def _lifecycle_bars(ax: Axes, groups: Sequence[Panel]) -> None:
    """Capture, instantiate and upload of each chain at one length, as bars; its break-even under its name."""
    present = pd.concat([p.rows for p in groups])
    split = bool(np.isfinite(numbers(present, "instantiate_us")).any())
    series = [
        BarSeries(
            stage if split or stage != "capture" else "capture + instantiate (not split)",
            STAGE_COLOURS[stage],
            "graph",
            column,
            ci=False,
        )  # fmt: skip
        for column, stage in STAGES
        if np.isfinite(numbers(present, column)).any()
    ]
    bar_chart(ax, groups, series or [BarSeries("setup", ORANGE, "graph", "setup_us", ci=False)], "time (µs)",
               notes=[_break_even_note(p) for p in groups])  # fmt: skip


@styled
def figure_graph_lifecycle(run: RunRecord, table: PlotTable | None = None) -> Figure:
    """What a graph costs before it pays off, and how many replays it takes to pay it back."""
    fig, axes, drawn, left_out = lines_and_bars(table_of(run, table), _lifecycle_panel, _lifecycle_bars)
    twins = [twin for twin in drawn if twin is not None]
    handles, labels = collect_legend([*axes, *twins])
    subtitle = (
        f"{environment_line(run)}\nthe medians of the passes' setup times (no interval drawn){left_out}"
    )
    return finish(fig, "CUDA Graph life cycle: setup cost and break-even", subtitle, handles, labels)
