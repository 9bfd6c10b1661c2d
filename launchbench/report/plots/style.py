"""The house style of every figure: Okabe–Ito colours, fonts, sizes, the header (title, subtitle, legend above
the panels), log axes with plain numbers, and saving (PNG or SVG)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")


import numpy as np  # noqa: E402
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from launchbench.results.environment import describe_environment
from launchbench.results.schema import RunRecord

FORMATS = ("png", "svg")

MINOR_SUBS = (2.0, 5.0)  # a log axis's minor ticks, in each decade, where it spans a factor of 4 or more

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
BLACK, ORANGE, SKY_BLUE, GREEN, YELLOW, BLUE, VERMILLION, PURPLE = (
    "#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7",
)  # fmt: skip

GREY = "#8C8C8C"

MODE_COLOURS = {"eager": VERMILLION, "graph": BLUE, "recapture": ORANGE, "cache": GREEN, "update": PURPLE,
                "torch_graph": SKY_BLUE}  # fmt: skip

MODE_MARKERS = {"eager": "o", "graph": "s", "recapture": "^", "cache": "D", "update": "v", "torch_graph": "P"}

MODE_LABELS = {
    "eager": "eager (kernel by kernel)",
    "graph": "CUDA Graph replay",
    "recapture": "re-capture at every change",
    "cache": "cache: one graph per shape",
    "update": "update one graph (cudaGraphExecUpdate)",
    "torch_graph": "torch.cuda.CUDAGraph replay",
}

SERIES_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, SKY_BLUE, VERMILLION, BLACK, YELLOW)

STAGE_COLOURS = {"capture": ORANGE, "instantiate": SKY_BLUE, "upload": GREEN}

WIDTH_IN = 8.0

DPI = 200  # 1600 px wide: a slide's width at full resolution; `plot --dpi` sets another

STYLE: dict[Any, Any] = {
    "font.size": 9,
    "axes.titlesize": 9.5,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8.5,
    "axes.grid": True,
    "axes.grid.which": "major",
    "grid.color": "#DDDDDD",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.hashsalt": "launchbench",
    "svg.fonttype": "none",
}

MEDIAN_CI = (
    "bars: the median's 95% CI, as in results.csv (order statistics, widened to the spread between passes)"
)


def environment_line(run: RunRecord, prefix: str = "") -> str:
    return f"{prefix}{describe_environment(run.environment)} · launchbench {run.launchbench_version}"


def panel_grid(n_panels: int, panel_height: float | None = None) -> tuple[Figure, list[Axes]]:
    """A figure of ``n_panels`` panels, two per row (one when there is only one)."""
    fig, axes, _ = sheet(max(n_panels, 1), 0, panel_height)
    return fig, axes


def sheet(
    n_panels: int, n_groups: int, panel_height: float | None = None
) -> tuple[Figure, list[Axes], Axes | None]:
    """Panels two per row (one when there is only one), and below them, across the width, one axes for
    ``n_groups`` chains measured at one length each (a grouped bar chart; None when there are none)."""
    ncols = 1 if n_panels <= 1 else 2
    nrows = math.ceil(n_panels / ncols)
    height = panel_height or (3.4 if ncols == 1 else 2.9)
    bars = 0.9 + 0.3 * n_groups if n_groups else 0.0
    ratios = [height] * nrows + ([bars] if n_groups else [])
    fig = Figure(figsize=(WIDTH_IN, sum(ratios)), dpi=DPI)
    grid = fig.add_gridspec(len(ratios), ncols, height_ratios=ratios)
    axes = [fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(n_panels)]
    bar_ax = fig.add_subplot(grid[nrows, :]) if n_groups else None
    for ax in [*axes, *([bar_ax] if bar_ax is not None else [])]:
        ax.set_label("panel")
    return fig, axes, bar_ax


def finish(
    fig: Figure, title: str, subtitle: str, handles: Sequence[Artist], labels: Sequence[str], ncol: int = 4
) -> Figure:
    """Title, subtitle and legend in a header above the panels; the panels laid out below it: laid out on
    the body alone (one pass of tight_layout), then the figure grows by the header and the panels keep their
    places in inches. That is what tight_layout with the body as its ``rect`` gives, the same pixels, without
    the second pass of every panel's ticks and labels that a ``rect`` costs."""
    body_height = fig.get_figheight()
    fig.tight_layout(h_pad=1.2, w_pad=1.5)
    fig.set_layout_engine(None)  # tight_layout leaves a placeholder engine that makes savefig lay out again
    subtitle_lines = subtitle.count("\n") + 1
    legend_rows = math.ceil(len(labels) / ncol) if labels else 0
    header = 0.42 + 0.17 * subtitle_lines + 0.2 * legend_rows + (0.08 if legend_rows else 0)
    height = body_height + header
    fig.set_size_inches(WIDTH_IN, height)
    below = body_height / height  # a fraction of the body as a fraction of the whole figure
    fig.subplots_adjust(bottom=fig.subplotpars.bottom * below, top=fig.subplotpars.top * below)
    fig.text(0.5, 1 - 0.1 / height, title, ha="center", va="top", fontsize=12, fontweight="bold")
    fig.text(0.5, 1 - 0.36 / height, subtitle, ha="center", va="top", fontsize=8, color="#444444")
    if labels:
        top = 1 - (0.42 + 0.17 * subtitle_lines) / height
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top), ncol=min(ncol, len(labels)),
                   frameon=False, handlelength=2.2, columnspacing=1.6)  # fmt: skip
    return fig


def collect_legend(axes: Sequence[Axes]) -> tuple[list[Artist], list[str]]:
    """Legend entries of all panels, each label once, in order of first appearance."""
    seen: dict[str, Any] = {}
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels, strict=True):
            if not label.startswith("_"):
                seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def fmt_number(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:g}"


def log_axis(ax: Axes, which: str, suffix: str = "") -> None:
    """Log scale with plain numbers (0.5, 10, 1,000). Spanning less than a factor of 4, every minor tick is
    labelled; wider, the minor ticks are at 2 and 5 of each decade, labelled up to a factor of 1,000."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt_number(v) + suffix))
    span = hi / lo if lo > 0 else math.inf
    if span < 4:
        axis.set_minor_formatter(FuncFormatter(lambda v, _: fmt_number(v) + suffix))
        return
    # each tick is artists to make, lay out and draw: eight a decade cost a 1,000-case plot a quarter of its time
    axis.set_minor_locator(LogLocator(subs=MINOR_SUBS))
    if span < 1000:
        axis.set_minor_formatter(FuncFormatter(lambda v, _: fmt_number(v) + suffix))
    else:
        axis.set_minor_formatter(NullFormatter())


def single_x(ax: Axes, x: np.ndarray) -> None:
    """A panel with one chain length: centre it in a factor-of-two range instead of matplotlib's decade."""
    values = np.unique(x[np.isfinite(x) & (x > 0)])
    if values.size == 1:
        ax.set_xlim(values[0] / 2, values[0] * 2)


def no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def styled(build: Callable[..., Figure]) -> Callable[..., Figure]:
    """Build the figure under the house style (fonts, grid, spines)."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with matplotlib.rc_context(STYLE):
            return build(*args, **kwargs)

    return wrapper


def save_figure(fig: Figure, out_dir: Path, stem: str, fmt: str = "png", dpi: int = DPI) -> Path:
    """Save as ``out_dir/stem.fmt`` (png or svg; svg without a date, so reruns give the same file);
    ``dpi`` sets the PNG's pixels (8 inches wide: 1600 px at the default 200)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.{fmt}"
    metadata = {"Date": None} if fmt == "svg" else {"Software": None}
    with matplotlib.rc_context(STYLE):
        fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
    return path
