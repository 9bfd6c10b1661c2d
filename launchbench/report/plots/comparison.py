"""Two runs compared: per case and mode, the ratio of medians with the interval and verdict of the
Comparison it is given (the one `launchbench compare` makes of them), one line each of compare's table
(report.comparison_table)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from launchbench.report.comparison_table import Line, lines
from launchbench.report.plots.style import (
    BLACK,
    DPI,
    GREEN,
    GREY,
    MODE_LABELS,
    ORANGE,
    VERMILLION,
    WIDTH_IN,
    environment_line,
    finish,
    no_data,
    styled,
)
from launchbench.results.schema import ALL_MODES, RunRecord

if TYPE_CHECKING:
    from launchbench.analysis.compare import Comparison

METRIC = "wall_us_per_launch"
VERDICT_WORDS = (
    ("slower", "slower (significant, >{threshold:.0%}, CI above 1)", VERMILLION),
    ("faster", "faster (significant, >{threshold:.0%}, CI below 1)", GREEN),
    ("same", "same (change below the threshold)", GREY),
    ("uncertain", "uncertain (could be either: noise or drift)", ORANGE),
)


def verdicts(threshold: float) -> tuple[tuple[str, str, str], ...]:
    """(verdict, legend label, colour) of each verdict the figure draws, at the comparison's threshold."""
    return tuple((key, label.format(threshold=threshold), colour) for key, label, colour in VERDICT_WORDS)


def ratio_lines(comparison: Comparison, metric: str = METRIC) -> list[Line]:
    """The lines of compare's table on ``metric`` that have a ratio: the row is in both runs and
    comparable."""
    return [
        line
        for line in lines(comparison)
        if line.metric.metric == metric
        and line.row.only_in is None
        and line.row.comparable
        and not math.isnan(line.metric.ratio)
    ]


def interval_of(line: Line) -> str:
    """Which interval compare drew: "t" over passes or rounds, "bootstrap" for rows of one pass (whose
    p value is NaN)."""
    return "bootstrap" if math.isnan(line.metric.p_value) else "t"


def interval_caption(drawn: Sequence[Line], paired: bool) -> str:
    """What the comparison figure's bars are, as compare computes them, with how many rows each."""
    kinds = {
        "t": f"t interval over {'interleaved rounds' if paired else 'passes'}",
        "bootstrap": "bootstrap of the medians, one pass",
    }
    counts = Counter(interval_of(line) for line in drawn)
    parts = [f"{text} ({counts[key]} rows)" for key, text in kinds.items() if key in counts]
    return "bars: compare's 95% CI of the ratio: " + "; ".join(parts or ["none"])


def _labels(drawn: Sequence[Line]) -> list[str]:
    """Each line's case (its scenario too where there are several)."""
    several = len({line.row.scenario for line in drawn}) > 1
    return [f"{line.row.scenario}/{line.row.case}" if several else line.row.case for line in drawn]


def _ratio_panel(ax: Axes, drawn: Sequence[Line], at: Sequence[float], threshold: float) -> None:
    """A point per line at its ratio (y: ``at``), its CI as error bars, coloured by verdict."""
    ax.axvspan(1 - threshold, 1 + threshold, color=GREY, alpha=0.15, linewidth=0)
    ax.axvline(1.0, color=BLACK, linewidth=0.9)
    for key, label, colour in verdicts(threshold):
        chosen = [i for i, line in enumerate(drawn) if line.metric.verdict == key]
        if not chosen:
            continue
        mcs = [drawn[i].metric for i in chosen]
        ratio = np.array([mc.ratio for mc in mcs])
        low = np.clip(ratio - np.array([mc.ratio_ci_low for mc in mcs]), 0, None)
        high = np.clip(np.array([mc.ratio_ci_high for mc in mcs]) - ratio, 0, None)
        y = np.array([at[i] for i in chosen], dtype=float)
        ax.errorbar(ratio, y, xerr=np.vstack([low, high]), fmt="o", color=colour, markersize=5, capsize=3,
                    elinewidth=1.2, label=label)  # fmt: skip
    ax.set_title(MODE_LABELS[drawn[0].row.mode])
    ax.grid(False, axis="y")
    lo = min(0.9, min(line.metric.ratio_ci_low for line in drawn) * 0.98)
    hi = max(1.1, max(line.metric.ratio_ci_high for line in drawn) * 1.02)
    ax.set_xlim(lo, hi)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.2f}×" if hi - lo < 0.5 else f"{v:g}×"))


def _legend(drawn: Sequence[Line], threshold: float) -> tuple[list[Artist], list[str]]:
    present = {line.metric.verdict for line in drawn}
    shown = [(label, colour) for key, label, colour in verdicts(threshold) if key in present]
    handles: list[Artist] = [Line2D([], [], color=c, marker="o", linestyle="none") for _, c in shown]
    handles.append(Patch(facecolor=GREY, alpha=0.15))
    return handles, [label for label, _ in shown] + [f"±{threshold:.0%} band"]


@styled
def figure_comparison(comparison: Comparison, base: RunRecord, cur: RunRecord) -> Figure:
    """Per case and mode: current / baseline median wall time per launch with the CI and verdict that
    ``comparison`` (of ``base`` and ``cur``) gives it, the band its threshold draws."""
    drawn = ratio_lines(comparison)
    threshold = comparison.settings.threshold(METRIC)
    labels = list(dict.fromkeys(_labels(drawn)))
    positions = {label: len(labels) - 1 - i for i, label in enumerate(labels)}  # first case on top
    at = [float(positions[label]) for label in _labels(drawn)]
    modes = [m for m in ALL_MODES if any(line.row.mode == m for line in drawn)] or ["eager"]
    fig = Figure(figsize=(WIDTH_IN, max(1.8, 0.6 + 0.24 * len(labels))), dpi=DPI)
    axes = list(np.atleast_1d(fig.subplots(1, len(modes), sharey=True, squeeze=False)).ravel())
    for ax, mode in zip(axes, modes, strict=True):
        ax.set_label("panel")
        chosen = [i for i, line in enumerate(drawn) if line.row.mode == mode]
        if not chosen:
            no_data(ax, "no case measured in both runs")
            continue
        _ratio_panel(ax, [drawn[i] for i in chosen], [at[i] for i in chosen], threshold)
        ax.set_xlabel(
            "B / A (ratio of medians)" if comparison.paired else "current / baseline (ratio of medians)"
        )
    if labels:
        axes[0].set_yticks(range(len(labels)), labels[::-1])
        axes[0].set_ylim(-0.7, len(labels) - 0.3)
    handles, names = _legend(drawn, threshold)
    subtitle = _comparison_subtitle(base, cur, drawn, comparison.paired)
    return finish(fig, _comparison_title(comparison), subtitle, handles, names, ncol=4)


def _comparison_title(comparison: Comparison) -> str:
    if comparison.paired:
        return "B vs A (one ab run, paired round by round): wall time per launch"
    return "Current vs baseline: wall time per launch"


def _comparison_subtitle(base: RunRecord, cur: RunRecord, drawn: Sequence[Line], paired: bool) -> str:
    unmatched = len(
        {(c.scenario, c.case_id) for c in base.cases} ^ {(c.scenario, c.case_id) for c in cur.cases}
    )
    names = ("A: ", "B: ") if paired else ("baseline: ", "current: ")
    subtitle = f"{environment_line(base, names[0])}\n{environment_line(cur, names[1])}"
    subtitle += f"\n{interval_caption(drawn, paired)}"
    return subtitle + (f"\n{unmatched} cases in only one run not shown" if unmatched else "")
