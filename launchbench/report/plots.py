"""Figures drawn from result files alone (no GPU): matplotlib with the Agg backend.

Each ``figure_*`` function builds one matplotlib Figure from a RunRecord (or a Comparison, for the
comparison); ``write_all_plots`` saves them under names that say what they show (see FIGURES and
docs/plots.md), and leaves out a figure that would have nothing to show (``draw_plots`` says which and
why). Figures are made with ``matplotlib.figure.Figure`` rather than pyplot, so nothing is kept in a
global figure registry and nothing has to be closed.

Every figure: a title, the GPU and versions in a subtitle, axes with units, a caption naming the
interval its bars draw, a legend above the panels (never over the data), Okabe–Ito colours (safe for
colour-blind readers), 8 inches wide: 1600 px at the default 200 dpi, for a slide.
"""

from __future__ import annotations

import functools
import gc
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.artist import Artist  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

from launchbench.analysis.costmodel import ShapeCost, fit_cost_model, fit_shape_model, length_axes  # noqa: E402
from launchbench.analysis.defaults import DEFAULT_THRESHOLD  # noqa: E402
from launchbench.analysis.stats import OUTLIER_MADS, outlier_mask  # noqa: E402
from launchbench.analysis.table import run_table  # noqa: E402
from launchbench.errors import LaunchbenchError  # noqa: E402
from launchbench.results.environment import describe_environment  # noqa: E402
from launchbench.results.schema import (  # noqa: E402
    ALL_MODES,
    MEASURED_STATUSES,
    METRIC_BY_NAME,
    MODES,
    CaseResult,
    RunRecord,
)

if TYPE_CHECKING:  # compare loads scipy.stats: only a comparison needs it
    from launchbench.analysis.compare import Comparison

FORMATS = ("png", "svg")

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
LENGTH_LABEL = "chain length (launches per iteration)"
REGRESSION_THRESHOLD = (
    DEFAULT_THRESHOLD  # a ratio beyond it with a CI clear of 1 is a regression / an improvement
)
MEDIAN_CI = (
    "bars: the median's 95% CI, as in results.csv (order statistics, widened to the spread between passes)"
)
PLOT_METRICS = ("wall_us_per_launch", "wall_us_per_iter", "cpu_us_per_launch")
SHAPE_METRICS = ("cpu_us_per_iter", "gpu_us_per_iter")  # what the shape cost model fits besides


def plot_table(run: RunRecord) -> pd.DataFrame:
    """results.csv's table of ``run`` with the metrics the figures draw (and the shape model fits), and
    without the host levels, which no figure draws."""
    names = PLOT_METRICS + (SHAPE_METRICS if has_shape_changes(run) else ())
    return run_table(run, [METRIC_BY_NAME[name] for name in names], levels=False)


def _table(run: RunRecord, table: pd.DataFrame | None) -> pd.DataFrame:
    return plot_table(run) if table is None else table


# ---------------------------------------------------------------------------------------------- panels


@dataclass(frozen=True)
class Panel:
    """The rows (both modes) of one chain of one scenario, at one value of the non-length parameters."""

    scenario: str
    chain: str
    variant: str  # the parameters that do not set the chain length, as "size=1000, dtype=float32"
    title: str
    rows: pd.DataFrame

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.chain, self.variant)

    @property
    def varying_length(self) -> bool:
        return self.rows["launches_per_iter"].nunique() > 1

    def mode_rows(self, mode: str, column: str | None = None) -> pd.DataFrame:
        """Rows of one mode by chain length; only those with a finite ``column`` when one is named."""
        rows = self.rows[self.rows["mode"] == mode].sort_values("launches_per_iter")
        if column is not None:
            rows = rows[np.isfinite(_num(rows, column))]
        return rows


def _num(rows: pd.DataFrame, column: str) -> np.ndarray:
    """A column as floats, missing values (None, empty) as NaN."""
    if column not in rows:
        return np.full(len(rows), math.nan)
    return pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)


def _variant_text(params: dict, keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={params[k]}" for k in keys if k in params)


def panels(table: pd.DataFrame) -> list[Panel]:
    """Group a results table by (scenario, chain), then by the parameters that do not set the length.
    Chains whose sizes change have their own figure (figure_shape_changes) and are left out."""
    if "iterations_per_shape" in table:
        table = table[table["iterations_per_shape"].isna()]
    if table.empty:
        return []
    table = table.assign(
        _params=table["params"].map(lambda s: json.loads(s) if isinstance(s, str) and s else {})
    )
    several_scenarios = table["scenario"].nunique() > 1
    out: list[Panel] = []
    for (scenario, chain), group in table.groupby(["scenario", "chain"], sort=False):
        length_keys = length_axes(
            list(group["_params"]), group["launches_per_iter"]
        )  # as the cost model's fit
        varying = sorted(
            k
            for k in {k for p in group["_params"] for k in p} - length_keys
            if group["_params"].map(lambda p, k=k: json.dumps(p.get(k))).nunique() > 1
        )
        variants = group["_params"].map(lambda p, v=varying: _variant_text(p, v))
        for variant, rows in group.groupby(variants, sort=False):
            kinds = str(rows["kinds"].iloc[0])
            title = chain if kinds == chain else f"{chain} ({kinds})"
            if several_scenarios:
                title = f"{scenario}: {title}"
            if variant:
                title = f"{title}, {variant}"
            out.append(Panel(str(scenario), str(chain), str(variant), title, rows.drop(columns="_params")))
    return out


# ---------------------------------------------------------------------------------------------- layout


def _environment_line(run: RunRecord, prefix: str = "") -> str:
    return f"{prefix}{describe_environment(run.environment)} · launchbench {run.launchbench_version}"


def _grid(n_panels: int, panel_height: float | None = None) -> tuple[Figure, list[Axes]]:
    """A figure of ``n_panels`` panels, two per row (one when there is only one)."""
    fig, axes, _ = _sheet(max(n_panels, 1), 0, panel_height)
    return fig, axes


def _sheet(
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


def _finish(
    fig: Figure, title: str, subtitle: str, handles: Sequence[Artist], labels: Sequence[str], ncol: int = 4
) -> Figure:
    """Title, subtitle and legend in a header above the panels; the panels laid out below it."""
    body_height = fig.get_figheight()
    subtitle_lines = subtitle.count("\n") + 1
    legend_rows = math.ceil(len(labels) / ncol) if labels else 0
    header = 0.42 + 0.17 * subtitle_lines + 0.2 * legend_rows + (0.08 if legend_rows else 0)
    height = body_height + header
    fig.set_size_inches(WIDTH_IN, height)
    fig.text(0.5, 1 - 0.1 / height, title, ha="center", va="top", fontsize=12, fontweight="bold")
    fig.text(0.5, 1 - 0.36 / height, subtitle, ha="center", va="top", fontsize=8, color="#444444")
    if labels:
        top = 1 - (0.42 + 0.17 * subtitle_lines) / height
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, top), ncol=min(ncol, len(labels)),
                   frameon=False, handlelength=2.2, columnspacing=1.6)  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 1 - header / height), h_pad=1.2, w_pad=1.5)
    return fig


def _collect_legend(axes: Sequence[Axes]) -> tuple[list[Artist], list[str]]:
    """Legend entries of all panels, each label once, in order of first appearance."""
    seen: dict[str, Any] = {}
    for ax in axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels, strict=True):
            if not label.startswith("_"):
                seen.setdefault(label, handle)
    return list(seen.values()), list(seen)


def _fmt_number(value: float) -> str:
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:g}"


def _log_axis(ax: Axes, which: str, suffix: str = "") -> None:
    """Log scale with plain numbers (0.5, 10, 1,000) and labelled minor ticks when the range is narrow."""
    axis = ax.xaxis if which == "x" else ax.yaxis
    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()
    axis.set_major_formatter(FuncFormatter(lambda v, _: _fmt_number(v) + suffix))
    span = hi / lo if lo > 0 else math.inf
    if span < 4:
        axis.set_minor_formatter(FuncFormatter(lambda v, _: _fmt_number(v) + suffix))
    elif span < 1000:
        axis.set_minor_formatter(
            FuncFormatter(lambda v, _: _fmt_number(v) + suffix if _leading(v) in (2, 5) else "")
        )
    else:
        axis.set_minor_formatter(NullFormatter())


def _single_x(ax: Axes, x: np.ndarray) -> None:
    """A panel with one chain length: centre it in a factor-of-two range instead of matplotlib's decade."""
    values = np.unique(x[np.isfinite(x) & (x > 0)])
    if values.size == 1:
        ax.set_xlim(values[0] / 2, values[0] * 2)


def _leading(value: float) -> int:
    return int(round(value / 10 ** math.floor(math.log10(value)))) if value > 0 else 0


def _no_data(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_xticks([])
    ax.set_yticks([])


def _styled(build: Callable[..., Figure]) -> Callable[..., Figure]:
    """Build the figure under the house style (fonts, grid, spines)."""

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> Figure:
        with matplotlib.rc_context(STYLE):
            return build(*args, **kwargs)

    return wrapper


# ----------------------------------------------------------------------------- chains at one length


def split_one_point(groups: Sequence[Panel]) -> tuple[list[Panel], list[Panel]]:
    """The panels swept over chain length (a panel each) and the chains measured at one length (drawn
    together as one grouped bar chart: a panel of one point says less than a bar among its peers)."""
    return [p for p in groups if p.varying_length], [p for p in groups if not p.varying_length]


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
        mid = float(_num(rows, self.column)[0])
        if not self.ci:
            return mid, mid, mid
        low, high = (float(_num(rows, f"{self.column}_ci_{end}")[0]) for end in ("low", "high"))
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
    label += f" · {_fmt_number(float(lengths.iloc[0]))} launches" if len(lengths) else ""
    return f"{label}\n{note}" if note else label


def group_labels(groups: Sequence[Panel], notes: Sequence[str] = ()) -> list[str]:
    several = len({p.scenario for p in groups}) > 1
    return [group_label(p, several, n) for p, n in zip(groups, notes or [""] * len(groups), strict=True)]


def _bar_chart(
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
        _log_axis(ax, "x", "×" if reference is not None else "")


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


def _lines_and_bars(
    table: pd.DataFrame,
    draw_panel: Callable[[Axes, Panel], Any],
    draw_groups: Callable[[Axes, list[Panel]], None],
) -> tuple[Figure, list[Axes], list[Any]]:
    """A figure's sheet: a panel per chain swept over its length (``draw_panel``; what it returns is
    returned) and one axes across the width for the chains at one length (``draw_groups``); a note
    instead when the run has no chain of fixed sizes."""
    lines, points = split_one_point(panels(table))
    if not lines and not points:
        fig, axes = _grid(1)
        _no_data(axes[0], "no chain of fixed sizes in this run")
        return fig, axes, []
    fig, axes, bar_ax = _sheet(len(lines), len(points))
    drawn = [draw_panel(ax, panel) for ax, panel in zip(axes, lines, strict=True)]
    if bar_ax is not None:
        draw_groups(bar_ax, points)
        axes.append(bar_ax)
    return fig, axes, drawn


def _mode_series(column: str) -> list[BarSeries]:
    return [BarSeries(MODE_LABELS[m], MODE_COLOURS[m], m, column) for m in MODES]


# ---------------------------------------------------------------------------------------- 1, 3: modes


def _missing_note(panel: Panel, column: str) -> str:
    notes = []
    for mode in MODES:
        rows = panel.rows[panel.rows["mode"] == mode]
        if len(rows) and not np.isfinite(_num(rows, column)).any():
            status = str(rows["status"].iloc[0])
            notes.append(f"{mode}: {status.replace('_', ' ')}")
    return "; ".join(notes)


def _mode_panel(ax: Axes, panel: Panel, column: str) -> None:
    """Median of ``column`` per chain length, eager and graph, with the median's 95% CI as error bars."""
    for mode in MODES:
        rows = panel.mode_rows(mode, column)
        if rows.empty:
            continue
        x = _num(rows, "launches_per_iter")
        y = _num(rows, column)
        low = np.nan_to_num(y - _num(rows, f"{column}_ci_low")).clip(0)
        high = np.nan_to_num(_num(rows, f"{column}_ci_high") - y).clip(0)
        ax.errorbar(
            x, y, yerr=np.vstack([low, high]), label=MODE_LABELS[mode], color=MODE_COLOURS[mode],
            marker=MODE_MARKERS[mode], markersize=4.5, linestyle="-" if panel.varying_length else "none",
            linewidth=1.4, capsize=3, elinewidth=1,
        )  # fmt: skip
    note = _missing_note(panel, column)
    if note:
        ax.text(
            0.98, 0.04, note, ha="right", va="bottom", transform=ax.transAxes, fontsize=7.5, color="#555555"
        )
    ax.set_title(panel.title)
    ax.margins(x=0.08, y=0.12)
    if np.isfinite(_num(panel.rows, column)).any():
        _single_x(ax, _num(panel.rows, "launches_per_iter"))
        _log_axis(ax, "x")
        _log_axis(ax, "y")


def _mode_figure(run: RunRecord, table: pd.DataFrame | None, column: str, title: str, ylabel: str) -> Figure:
    def draw_panel(ax: Axes, panel: Panel) -> None:
        _mode_panel(ax, panel, column)
        ax.set_xlabel(LENGTH_LABEL)
        ax.set_ylabel(ylabel)

    fig, axes, _ = _lines_and_bars(
        _table(run, table),
        draw_panel,
        lambda ax, points: _bar_chart(ax, points, _mode_series(column), ylabel),
    )
    handles, labels = _collect_legend(axes)
    subtitle = f"{_environment_line(run)}\n{MEDIAN_CI}"
    return _finish(fig, title, subtitle, handles, labels)


@_styled
def figure_wall_per_launch(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """Headline: wall time per launch against chain length, eager vs graph, one panel per chain (chains
    at one length each: one grouped bar chart). ``table``: plot_table(run), when the caller has it."""
    return _mode_figure(
        run, table, "wall_us_per_launch", "Wall time per launch vs chain length", "wall time per launch (µs)"
    )


@_styled
def figure_cpu_per_launch(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """The launching thread's CPU time per launch, eager vs graph: the CPU a graph frees."""
    return _mode_figure(
        run,
        table,
        "cpu_us_per_launch",
        "CPU time per launch: what a CUDA Graph frees",
        "launching CPU time per launch (µs)",
    )


# ------------------------------------------------------------------------------------------ 2: speedup


@dataclass(frozen=True)
class _ModelCrossover:
    scenario: str
    chain: str
    group: dict[str, Any]  # the non-length sweep values the fit is for ({} without a group column)
    crossover: float | None

    def fits(self, panel: Panel) -> bool:
        if (self.scenario, self.chain) != (panel.scenario, panel.chain):
            return False
        if not self.group:
            return not panel.variant
        params = [json.loads(p) for p in panel.rows["params"]]
        return all(p.get(k) == v for p in params for k, v in self.group.items())


def _model_crossovers(table: pd.DataFrame) -> list[_ModelCrossover] | None:
    """Crossovers from launchbench.analysis.costmodel.fit_cost_model (None when its table lacks a column)."""
    try:
        model = fit_cost_model(table)
        if "group" not in model:
            model = model.assign(group="{}")
        out = []
        for (scenario, chain, group), rows in model.groupby(["scenario", "chain", "group"], sort=False):
            values = _num(rows, "crossover_launches")
            known = values[~np.isnan(values)]  # inf (graph never wins) is kept
            crossover = float(known[0]) if known.size else None
            out.append(_ModelCrossover(str(scenario), str(chain), json.loads(str(group or "{}")), crossover))
        return out
    except (KeyError, ValueError, TypeError, AttributeError):
        return None


def crossovers(run: RunRecord, table: pd.DataFrame | None = None) -> dict[tuple[str, str, str], float | None]:
    """Fitted crossover chain length per panel key (scenario, chain, variant), from the cost model.
    inf: the graph never wins; None: no fit for that panel."""
    table = _table(run, table)
    model = _model_crossovers(table)
    out: dict[tuple[str, str, str], float | None] = {}
    for panel in panels(table):
        matches = [m for m in model or [] if m.fits(panel)]
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
        x = _num(rows, "launches_per_iter")
        c = cross.get(panel.key)
        ax.plot(x, _num(rows, "speedup"), color=colour, marker="os^Dv<>p"[i % 8], markersize=5, linewidth=1.5,
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
    _log_axis(ax, "x")
    _log_axis(ax, "y", "×")
    ax.set_xlabel(LENGTH_LABEL)
    ax.set_ylabel("speedup: eager / graph wall time per iteration (×)")
    return marked


SPEEDUP_BARS = (
    BarSeries("graph speedup (eager / graph wall time per iteration)", BLUE, "graph", "speedup", ci=False),
)


@_styled
def figure_speedup(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """Graph speedup (eager / graph wall time per iteration) against chain length, crossovers marked;
    chains at one length each as bars."""
    table = _table(run, table)
    lines, points = split_one_point(panels(table))
    lines = lines if any(not p.mode_rows("graph", "speedup").empty for p in lines) else []
    points = points if any(not p.mode_rows("graph", "speedup").empty for p in points) else []
    marked = False
    if not lines and not points:
        fig, axes = _grid(1, 3.6)
        _no_data(axes[0], "no graph results in this run (not capturable or failed)")
    else:
        fig, axes, bar_ax = _sheet(1 if lines else 0, len(points), 3.6)
        if lines:
            marked = _speedup_lines(axes[0], lines, crossovers(run, table))
        if bar_ax is not None:
            _bar_chart(bar_ax, points, SPEEDUP_BARS, "speedup: eager / graph wall time per iteration (×)",
                       (1.0, "speedup 1× (no gain)"))  # fmt: skip
            axes.append(bar_ax)
    handles, labels = _collect_legend(axes)
    if marked:
        handles.append(
            Line2D([], [], marker="D", markersize=7, color="white", markeredgecolor=BLACK, linestyle=":")
        )
        labels.append("fitted crossover: graph = eager (dotted line, chain's colour)")
    subtitle = f"{_environment_line(run)}\nspeedup of the medians (no interval drawn; see the per-launch figures' CIs)"
    return _finish(fig, "CUDA Graph speedup vs chain length", subtitle, handles, labels, ncol=1)


# ---------------------------------------------------------------------------------------- 4: lifecycle

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
        _no_data(ax, _no_graph_text(panel))
        return None
    nodes = _num(rows, "graph_nodes")
    x = nodes if np.isfinite(nodes).all() else _num(rows, "launches_per_iter")
    ax.set_xlabel("graph nodes" if x is nodes else "launches per iteration (node count not recorded)")
    style = "-" if len(np.unique(x)) > 1 else "none"
    split = bool(np.isfinite(_num(rows, "instantiate_us")).any())
    for column, stage in STAGES:
        y = _num(rows, column)
        if not np.isfinite(y).any():
            continue
        label = stage if split or stage != "capture" else "capture + instantiate (not split)"
        ax.plot(x, y, color=STAGE_COLOURS[stage], marker="o", markersize=4, linestyle=style, label=label)
    ax.set_ylabel("time (µs)")
    ax.margins(x=0.08, y=0.12)
    _single_x(ax, x)
    _log_axis(ax, "x")
    _log_axis(ax, "y")
    return _break_even_axis(ax, x, _num(rows, "break_even_iters"), style)


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
    _log_axis(twin, "y")
    return twin


def _break_even_note(panel: Panel) -> str:
    rows = panel.mode_rows("graph", "break_even_iters")
    if rows.empty:
        return "graph not faster: no break-even" if not panel.mode_rows("graph", "setup_us").empty else ""
    return f"pays back after {float(_num(rows, 'break_even_iters')[0]):.3g} replays"


def _lifecycle_bars(ax: Axes, groups: Sequence[Panel]) -> None:
    """Capture, instantiate and upload of each chain at one length, as bars; its break-even under its name."""
    present = pd.concat([p.rows for p in groups])
    split = bool(np.isfinite(_num(present, "instantiate_us")).any())
    series = [
        BarSeries(
            stage if split or stage != "capture" else "capture + instantiate (not split)",
            STAGE_COLOURS[stage],
            "graph",
            column,
            ci=False,
        )  # fmt: skip
        for column, stage in STAGES
        if np.isfinite(_num(present, column)).any()
    ]
    _bar_chart(ax, groups, series or [BarSeries("setup", ORANGE, "graph", "setup_us", ci=False)], "time (µs)",
               notes=[_break_even_note(p) for p in groups])  # fmt: skip


@_styled
def figure_graph_lifecycle(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """What a graph costs before it pays off, and how many replays it takes to pay it back."""
    fig, axes, drawn = _lines_and_bars(_table(run, table), _lifecycle_panel, _lifecycle_bars)
    twins = [twin for twin in drawn if twin is not None]
    handles, labels = _collect_legend([*axes, *twins])
    subtitle = f"{_environment_line(run)}\nthe medians of the passes' setup times (no interval drawn)"
    return _finish(fig, "CUDA Graph life cycle: setup cost and break-even", subtitle, handles, labels)


# ------------------------------------------------------------------------------------ 5: distributions


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


def _outlier_reach(boxes: list[dict[str, Any]]) -> float:
    """Half-height of the y axis (%): a little beyond the longest whisker, at least ±2%."""
    return max(2.0, *(max(abs(float(b["whislo"])), abs(float(b["whishi"]))) for b in boxes)) * 1.6


def _clip_outliers(
    ax: Axes, box: dict[str, Any], reach: float, colour: str, horizontal: bool = False
) -> dict[str, Any]:
    """Keep the boxes readable: outliers beyond ±reach are not drawn but counted at the edge ('3↑')."""
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
    ax: Axes, boxes: list[dict[str, Any]], colours: list[str], reach: float, horizontal: bool = False
) -> None:
    """Box plots drawn as a few collections per colour (the boxes as one, whiskers, caps and medians as
    another, outliers as one series): Axes.bxp makes six artists a box, seconds and a hundred MB for a
    thousand cases."""
    for colour in dict.fromkeys(colours):
        mine = [
            _clip_outliers(ax, box, reach, colour, horizontal)
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
    labels = [_fmt_number(v) for v in order["launches_per_iter"]]
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
    note = _missing_note(panel, "wall_us_per_launch")
    if note:
        ax.text(0.98, 0.96, note, ha="right", va="top", transform=ax.transAxes, fontsize=7.5, color="#555555")


def _distribution_groups(ax: Axes, groups: Sequence[Panel], cases: dict[tuple[str, str], CaseResult]) -> None:
    """Chains at one length each: a pair of horizontal boxes per chain (eager above, graph below),
    the medians in µs at the right edge."""
    keys = [(p.scenario, str(p.rows["case"].iloc[0])) for p in groups]
    boxes, colours = _case_boxes(cases, keys)
    boxes = [{**box, "position": len(groups) - 1 - float(box["position"])} for box in boxes]
    reach = _outlier_reach(boxes) if boxes else 10.0
    _draw_boxes(ax, boxes, colours, reach, horizontal=True)
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


@_styled
def figure_sample_distributions(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """Every raw sample of wall time per launch, per case and mode, as box plots: noise and outliers."""
    cases = {(c.scenario, c.case_id): c for c in run.cases}
    fig, axes, _ = _lines_and_bars(
        _table(run, table),
        lambda ax, panel: _distribution_panel(ax, panel, cases),
        lambda ax, points: _distribution_groups(ax, points, cases),
    )
    handles: list[Artist] = [
        Patch(facecolor=MODE_COLOURS[m] + "55", edgecolor=MODE_COLOURS[m]) for m in MODES
    ]
    handles.append(Line2D([], [], color=GREY, marker=".", linestyle="none", markersize=6))
    labels = [*(MODE_LABELS[m] for m in MODES), f"outlier (> {OUTLIER_MADS:g} scaled MADs)"]
    subtitle = (
        _environment_line(run)
        + "\nbox: quartiles · whiskers: furthest samples that are not outliers · numbers: median (µs per launch)"
    )
    return _finish(fig, "Spread of wall time per launch, sample by sample", subtitle, handles, labels, ncol=3)


# ------------------------------------------------------------------------------------- 6: comparison

VERDICTS = (
    ("slower", f"slower (significant, >{REGRESSION_THRESHOLD:.0%}, CI above 1)", VERMILLION),
    ("faster", f"faster (significant, >{REGRESSION_THRESHOLD:.0%}, CI below 1)", GREEN),
    ("same", "same (change below the threshold)", GREY),
    ("uncertain", "uncertain (could be either: noise or drift)", ORANGE),
)


def compare_like_the_command(base: RunRecord, cur: RunRecord, paired: bool = False) -> Comparison:
    """The Comparison `launchbench compare BASE CUR` computes: its default settings (every default
    metric, so the p adjustment over rows and the noise priors are the command's), paired round by
    round when ``paired`` (the two sides of one `launchbench ab` run; analysis.compare.sides_of_one_ab)."""
    from launchbench.analysis.compare import compare_runs

    return compare_runs(base, cur, allow_different_gpu=True, paired=paired)


def ratio_rows(comparison: Comparison, metric: str = "wall_us_per_launch") -> pd.DataFrame:
    """One row per case and mode compared on ``metric``: ratio, its CI, the verdict and which interval
    it is ("t" over passes or rounds, "bootstrap" for rows of one pass: compare's p value is NaN)."""
    several = len({row.scenario for row in comparison.rows}) > 1
    rows = []
    for row in comparison.rows:
        result = row.metric(metric)
        if result is None or row.only_in is not None or not row.comparable or math.isnan(result.ratio):
            continue
        label = f"{row.scenario}/{row.case}" if several else row.case
        interval = "bootstrap" if math.isnan(result.p_value) else "t"
        rows.append({"scenario": row.scenario, "case": row.case, "label": label, "mode": row.mode, "ratio": result.ratio,
                     "ci_low": result.ratio_ci_low, "ci_high": result.ratio_ci_high, "verdict": result.verdict,
                     "interval": interval})  # fmt: skip
    columns = ["scenario", "case", "label", "mode", "ratio", "ci_low", "ci_high", "verdict", "interval"]
    return pd.DataFrame(rows, columns=columns)


def comparison_table(
    base: RunRecord, cur: RunRecord, metric: str = "wall_us_per_launch", paired: bool = False
) -> pd.DataFrame:
    """ratio_rows of the comparison `launchbench compare` makes of the two runs (compare_like_the_command)."""
    return ratio_rows(compare_like_the_command(base, cur, paired), metric)


def interval_caption(table: pd.DataFrame, paired: bool) -> str:
    """What the comparison figure's bars are, as compare computes them, with how many rows each."""
    kinds = {
        "t": f"t interval over {'interleaved rounds' if paired else 'passes'}",
        "bootstrap": "bootstrap of the medians, one pass",
    }
    counts = table["interval"].value_counts()
    parts = [f"{text} ({int(counts[key])} rows)" for key, text in kinds.items() if key in counts]
    return "bars: compare's 95% CI of the ratio: " + "; ".join(parts or ["none"])


def _ratio_panel(ax: Axes, rows: pd.DataFrame, positions: dict[str, int], mode: str) -> None:
    ax.axvspan(1 - REGRESSION_THRESHOLD, 1 + REGRESSION_THRESHOLD, color=GREY, alpha=0.15, linewidth=0)
    ax.axvline(1.0, color=BLACK, linewidth=0.9)
    for key, label, colour in VERDICTS:
        sub = rows[rows["verdict"] == key]
        if sub.empty:
            continue
        y = sub["label"].map(positions).to_numpy(dtype=float)
        ratio = sub["ratio"].to_numpy(dtype=float)
        xerr = np.vstack([(ratio - sub["ci_low"]).clip(lower=0), (sub["ci_high"] - ratio).clip(lower=0)])
        ax.errorbar(
            ratio, y, xerr=xerr, fmt="o", color=colour, markersize=5, capsize=3, elinewidth=1.2, label=label
        )
    ax.set_title(MODE_LABELS[mode])
    ax.grid(False, axis="y")
    lo = min(0.9, float(rows["ci_low"].min()) * 0.98)
    hi = max(1.1, float(rows["ci_high"].max()) * 1.02)
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2f}×" if hi - lo < 0.5 else f"{v:g}×"))


@_styled
def figure_comparison(
    base: RunRecord, cur: RunRecord, paired: bool = False, comparison: Comparison | None = None
) -> Figure:
    """Per case and mode: current / baseline median wall time per launch with the CI and verdict
    `launchbench compare` gives it (``comparison``, else compare_like_the_command(base, cur, paired))."""
    comparison = comparison or compare_like_the_command(base, cur, paired)
    table = ratio_rows(comparison)
    labels = list(dict.fromkeys(table["label"]))
    positions = {label: len(labels) - 1 - i for i, label in enumerate(labels)}  # first case on top
    modes = [m for m in ALL_MODES if (table["mode"] == m).any()] or ["eager"]
    fig = Figure(figsize=(WIDTH_IN, max(1.8, 0.6 + 0.24 * len(labels))), dpi=DPI)
    axes = list(np.atleast_1d(fig.subplots(1, len(modes), sharey=True, squeeze=False)).ravel())
    for ax, mode in zip(axes, modes, strict=True):
        ax.set_label("panel")
        rows = table[table["mode"] == mode]
        if rows.empty:
            _no_data(ax, "no case measured in both runs")
            continue
        _ratio_panel(ax, rows, positions, mode)
        ax.set_xlabel(
            "B / A (ratio of medians)" if comparison.paired else "current / baseline (ratio of medians)"
        )
    if labels:
        axes[0].set_yticks(range(len(labels)), labels[::-1])
        axes[0].set_ylim(-0.7, len(labels) - 0.3)
    present = set(table["verdict"])
    handles: list[Artist] = [
        Line2D([], [], color=c, marker="o", linestyle="none") for k, _, c in VERDICTS if k in present
    ]
    names = [label for k, label, _ in VERDICTS if k in present]
    handles.append(Patch(facecolor=GREY, alpha=0.15))
    names.append(f"±{REGRESSION_THRESHOLD:.0%} band")
    return _finish(fig, _comparison_title(comparison), _comparison_subtitle(base, cur, table, comparison.paired),
                   handles, names, ncol=4)  # fmt: skip


def _comparison_title(comparison: Comparison) -> str:
    if comparison.paired:
        return "B vs A (one ab run, paired round by round): wall time per launch"
    return "Current vs baseline: wall time per launch"


def _comparison_subtitle(base: RunRecord, cur: RunRecord, table: pd.DataFrame, paired: bool) -> str:
    unmatched = len(
        {(c.scenario, c.case_id) for c in base.cases} ^ {(c.scenario, c.case_id) for c in cur.cases}
    )
    names = ("A: ", "B: ") if paired else ("baseline: ", "current: ")
    subtitle = f"{_environment_line(base, names[0])}\n{_environment_line(cur, names[1])}"
    subtitle += f"\n{interval_caption(table, paired)}"
    return subtitle + (f"\n{unmatched} cases in only one run not shown" if unmatched else "")


# ------------------------------------------------------------------------------------ 7: shape changes

SHAPE_LABEL = "iterations per shape (before the size changes)"


@dataclass(frozen=True)
class ShapePanel:
    """The rows of one chain whose sizes change, at one value of the parameters other than the
    iterations per shape, with the cost model's fits for them (``fits`` rows of fit_shape_model)."""

    title: str
    rows: pd.DataFrame
    fits: pd.DataFrame


def shape_panels(table: pd.DataFrame) -> list[ShapePanel]:
    if "iterations_per_shape" not in table:
        return []
    shaped = table[table["iterations_per_shape"].notna()]
    if shaped.empty:
        return []
    model = fit_shape_model(table)
    several = shaped["scenario"].nunique() > 1
    out = []
    for (scenario, chain), group in shaped.groupby(["scenario", "chain"], sort=False):
        params = group["params"].map(lambda s: json.loads(s) if isinstance(s, str) and s else {})
        axes = length_axes(list(params), [int(v) for v in group["iterations_per_shape"]])
        keys = params.map(
            lambda p, a=axes: json.dumps({k: v for k, v in p.items() if k not in a}, sort_keys=True)
        )
        for key, rows in group.groupby(keys, sort=False):
            fits = model[
                (model["scenario"] == scenario) & (model["chain"] == chain) & (model["group"] == key)
            ]
            fixed = json.loads(str(key))
            distinct = int(rows["distinct_shapes"].iloc[0])
            title = f"{scenario}: {chain}" if several else str(chain)
            title += f", {distinct} shapes" + (f", {_variant_text(fixed, sorted(fixed))}" if fixed else "")
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
    xs = _num(panel.rows, "iterations_per_shape")
    for mode in ALL_MODES:
        rows = panel.rows[panel.rows["mode"] == mode].sort_values("iterations_per_shape")
        rows = rows[np.isfinite(_num(rows, "wall_us_per_iter"))]
        if rows.empty:
            continue
        x = _num(rows, "iterations_per_shape")
        y = _num(rows, "wall_us_per_iter")
        low = np.nan_to_num(y - _num(rows, "wall_us_per_iter_ci_low")).clip(0)
        high = np.nan_to_num(_num(rows, "wall_us_per_iter_ci_high") - y).clip(0)
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
    if np.isfinite(_num(panel.rows, "wall_us_per_iter")).any():
        _single_x(ax, xs)
        _log_axis(ax, "x")
        _log_axis(ax, "y")


@_styled
def figure_shape_changes(run: RunRecord, table: pd.DataFrame | None = None) -> Figure:
    """Chains whose sizes change: cost per iteration of eager and each graph strategy against the
    iterations per shape, with the cost model's curves and the crossovers where the fastest one changes."""
    groups = shape_panels(_table(run, table))
    fig, axes = _grid(len(groups), 3.4)
    for ax, panel in zip(axes, groups, strict=False):
        _shape_panel(ax, panel)
    if not groups:
        _no_data(axes[0], "no chain whose sizes change in this run")
    for ax in axes:
        ax.set_xlabel(SHAPE_LABEL)
        ax.set_ylabel("wall time per iteration (µs)")
    handles, labels = _collect_legend(axes)
    if labels:
        handles += [Line2D([], [], color=GREY, linewidth=1.2),
                    Line2D([], [], color=GREY, marker="X", markeredgecolor=BLACK, linestyle="none"),
                    Line2D([], [], color=GREY, linestyle=":", linewidth=1.2)]  # fmt: skip
        labels += ["lines: model, max(GPU, host + per change / k)", "✕: model crosses eager",
                   "dotted: the fastest strategy changes"]  # fmt: skip
    subtitle = f"{_environment_line(run)}\n{MEDIAN_CI}\nsetup paid at a change spread over k iterations"
    return _finish(fig, "Sizes that change: cost per iteration vs iterations per shape", subtitle, handles,
                   labels, ncol=2)  # fmt: skip


def has_shape_changes(run: RunRecord) -> bool:
    return any(case.shapes is not None for case in run.cases)


# ------------------------------------------------------------------------------------------- writing

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
    return any(np.isfinite(_num(r, column)).any() for r in rows)


def empty_reason(stem: str, table: pd.DataFrame) -> str | None:
    """Why the single-run figure ``stem`` would show nothing for this table, or None when it has data."""
    groups = panels(table)
    if stem == SHAPE_FIGURE:
        return None if shape_panels(table) else "no chain whose sizes change in this run"
    if not groups:
        shaped = "iterations_per_shape" in table and bool(table["iterations_per_shape"].notna().any())
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


def draw_run_plots(run: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI) -> PlotsWritten:
    """The single-run figures of ``run`` that have something to show, in ``out_dir``: the five of
    FIGURES, and the shape-change figure when the run holds a chain whose sizes change."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown plot format {fmt!r}; choose one of {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    table = plot_table(run)
    builders: dict[str, Callable[..., Figure]] = dict(FIGURES)
    if has_shape_changes(run):
        builders[SHAPE_FIGURE] = figure_shape_changes
    paths, skipped = [], []
    for stem, build in builders.items():
        reason = empty_reason(stem, table)
        if reason is None:
            paths.append(save_figure(build(run, table), out_dir, stem, fmt, dpi))
            gc.collect()  # a figure is a web of reference cycles: free one before drawing the next
        else:
            skipped.append(SkippedFigure(out_dir / f"{stem}.{fmt}", reason))
    return PlotsWritten(tuple(paths), tuple(skipped))


def write_run_plots(run: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI) -> list[Path]:
    """draw_run_plots' files."""
    return list(draw_run_plots(run, out_dir, fmt, dpi).paths)


def draw_comparison(
    base: RunRecord, cur: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI, paired: bool = False
) -> PlotsWritten:
    """comparison_ratio.fmt in ``out_dir``, unless the runs have no row compared on wall time per launch."""
    comparison = compare_like_the_command(base, cur, paired)
    if ratio_rows(comparison).empty:
        reason = "the runs have no case and mode measured in both"
        return PlotsWritten((), (SkippedFigure(Path(out_dir) / f"{COMPARISON_FIGURE}.{fmt}", reason),))
    fig = figure_comparison(base, cur, paired, comparison)
    return PlotsWritten((save_figure(fig, Path(out_dir), COMPARISON_FIGURE, fmt, dpi),))


def plot_comparison(
    base: RunRecord, cur: RunRecord, out_dir: Path, fmt: str = "png", dpi: int = DPI, paired: bool = False
) -> Path:
    """The ratio figure of two runs (current / baseline) as ``out_dir/comparison_ratio.fmt``, drawn even
    when it has no row."""
    fig = figure_comparison(base, cur, paired)
    return save_figure(fig, Path(out_dir), COMPARISON_FIGURE, fmt, dpi)


def _safe_name(label: str) -> str:
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label).strip("._")
    return name or "run"


def write_all_plots(
    runs: Sequence[RunRecord],
    out_dir: Path,
    fmt: str = "png",
    labels: Sequence[str] | None = None,
    dpi: int = DPI,
    paired: bool = False,
) -> list[Path]:
    """draw_plots' files."""
    return list(draw_plots(runs, out_dir, fmt, labels, dpi, paired).paths)


def draw_plots(
    runs: Sequence[RunRecord],
    out_dir: Path,
    fmt: str = "png",
    labels: Sequence[str] | None = None,
    dpi: int = DPI,
    paired: bool = False,
) -> PlotsWritten:
    """Every figure with something to show: one run's in ``out_dir``; several runs' each in a subfolder
    (named by ``labels``, else run1, run2, ...), plus ``comparison_ratio`` (second run / first) in
    ``out_dir`` when there are two (``paired``: they are the two sides of one ab run, compared round by
    round as compare does). The figures left out are named with the reason."""
    out_dir = Path(out_dir)
    try:  # an unknown fmt is refused before anything is written
        return _draw_plots(runs, out_dir, fmt, labels, dpi, paired)
    except (
        OSError
    ) as err:  # a full disk, a read-only folder: the user's to fix, for `plot` and `run --plot` alike
        raise LaunchbenchError(f"cannot write figures to {out_dir}: {err}") from None


def _draw_plots(
    runs: Sequence[RunRecord], out_dir: Path, fmt: str, labels: Sequence[str] | None, dpi: int, paired: bool
) -> PlotsWritten:
    if len(runs) == 1:
        return draw_run_plots(runs[0], out_dir, fmt, dpi)
    names = [_safe_name(s) for s in labels] if labels else [f"run{i + 1}" for i in range(len(runs))]
    if len(names) != len(runs) or len(set(names)) != len(names):
        names = [f"run{i + 1}_{name}" for i, name in enumerate(names[: len(runs)])]
        names += [f"run{i + 1}" for i in range(len(names), len(runs))]
    parts = [draw_run_plots(run, out_dir / name, fmt, dpi) for run, name in zip(runs, names, strict=True)]
    if len(runs) == 2:
        parts.append(draw_comparison(runs[0], runs[1], out_dir, fmt, dpi, paired))
    return PlotsWritten(
        tuple(p for part in parts for p in part.paths), tuple(s for part in parts for s in part.skipped)
    )
