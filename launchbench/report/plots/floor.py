"""The floor figure: per layer and argument count a stacked bar of the eager cost per launch along the
layer's real call path (the C floor at the bottom, then each layer on the way up: cuda-bindings, CuPy's
RawKernel and torch each directly on the C floor, CuPy's ElementwiseKernel and ufunc on RawKernel), each
segment what one layer adds above its parent, with the graph's cost per launch across the bar."""

from __future__ import annotations

from pathlib import Path

from matplotlib.artist import Artist
from matplotlib.container import Container
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from launchbench.report.floor import PARENT, US, FloorReport, FloorRow
from launchbench.report.plots.style import (
    BLACK,
    BLUE,
    DPI,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    SKY_BLUE,
    VERMILLION,
    WIDTH_IN,
    YELLOW,
    save_figure,
)
from launchbench.scenario.floor import LAYERS, Layer

STEM = "floor"
# Okabe & Ito colours, one per layer in stacking order
COLOURS = (BLACK, ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE)


def _segments(row: FloorRow, rows: dict[tuple[Layer, int | None], FloorRow]) -> list[tuple[Layer, float]]:
    """The bar of ``row`` from the bottom: each measured layer on its call path, with what it adds over
    the one below it, as the difference of their eager medians (so the bar's top is the layer's own
    median; the table's steps are paired round by round)."""
    chain: list[FloorRow] = [row]
    while chain[-1].below is not None:
        below = chain[-1].below
        same = rows.get((below, chain[-1].args)) or min(
            (r for (name, _), r in rows.items() if name == below), key=lambda r: r.args or 0
        )
        chain.append(same)
    bottom_up = list(reversed(chain))
    costs = [r.eager_s or 0.0 for r in bottom_up]
    return [
        (r.layer, cost - below) for r, cost, below in zip(bottom_up, costs, [0.0, *costs[:-1]], strict=True)
    ]


def _label(row: FloorRow) -> str:
    return row.layer if row.args is None else f"{row.layer}, {row.args} args"


def figure_floor(report: FloorReport) -> Figure | None:
    """The stacked bars, or None where no layer measured an eager cost."""
    measured = [r for r in report.rows if r.eager_s is not None and r.skipped is None]
    if not measured:
        return None
    rows = {(r.layer, r.args): r for r in measured}
    fig = Figure(figsize=(WIDTH_IN, 4.5), layout="constrained")
    ax = fig.add_subplot()
    interval = None  # the first paired step's error bar, for the legend
    for x, row in enumerate(measured):
        bottom = 0.0
        for layer, adds in _segments(row, rows):
            ax.bar(x, adds * US, bottom=bottom, color=COLOURS[LAYERS.index(layer)], width=0.6)
            bottom += adds * US
        if row.above_ci_s is not None and row.above_s is not None:  # the top step's interval, at the top
            low, high = row.above_ci_s
            spread = [[(row.above_s - low) * US], [(high - row.above_s) * US]]
            drawn = ax.errorbar(x, bottom, yerr=spread, color=GREY, capsize=3, linewidth=1)
            interval = interval if interval is not None else drawn
        if row.graph_s is not None:
            ax.plot([x - 0.3, x + 0.3], [row.graph_s * US] * 2, color=VERMILLION, linewidth=2, linestyle="--")
    gpu = next((r.gpu_node_s for r in report.rows if r.gpu_node_s is not None), None)
    if gpu is not None:
        ax.axhline(gpu * US, color="#999999", linewidth=1, linestyle=":")
    ax.set_xticks(range(len(measured)), [_label(r) for r in measured], fontsize=7, rotation=35, ha="right")
    ax.set_ylabel("wall time per launch (µs)")
    used = sorted({layer for r in measured for layer, _ in _segments(r, rows)}, key=LAYERS.index)
    handles: list[Artist | Container] = [
        Patch(color=COLOURS[LAYERS.index(layer)], label=f"{layer} (above {PARENT[layer] or 'zero'})")
        for layer in used
    ]
    handles.append(Patch(facecolor="none", edgecolor=VERMILLION, linestyle="--", label="graph, per launch"))
    if gpu is not None:
        handles.append(
            Patch(facecolor="none", edgecolor="#999999", linestyle=":", label="GPU per-node floor")
        )
    if interval is not None:
        interval.set_label("95% CI of the top step, paired by round")
        handles.append(interval)
    ax.legend(handles=handles, fontsize=7, loc="upper left")
    ax.set_title(
        "Where a launch's time goes: each layer's cost above its parent on the call path", fontsize=10
    )
    return fig


def draw_floor_figure(report: FloorReport, out_dir: Path, fmt: str = "png", dpi: int = DPI) -> Path | None:
    """``out_dir/floor.<fmt>``; None (nothing written) where no layer was measured."""
    fig = figure_floor(report)
    return None if fig is None else save_figure(fig, out_dir, STEM, fmt, dpi)
