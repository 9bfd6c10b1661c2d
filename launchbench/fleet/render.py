"""The fleet report shown: a table per member and key row, one line per outlier, fleet.csv, and a strip
plot per key row with the outliers labelled."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from rich.table import Table  # noqa: E402

from launchbench.fleet.score import FleetReport, Outlier, Score  # noqa: E402
from launchbench.report.terminal import literal  # noqa: E402

BLUE, VERMILLION, GREY = "#0072B2", "#D55E00", "#8C8C8C"  # Okabe–Ito, as the run's plots


def _member(node: str, device: int | None) -> str:
    return node if device is None else f"{node} GPU {device}"


def _pct(value: float | None) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:+.1%}"


def fleet_frame(report: FleetReport) -> pd.DataFrame:
    """fleet.csv: one row per member and key row (µs in the row's metric)."""
    return pd.DataFrame.from_records(
        [
            {
                "row": s.row.label, "scenario": s.row.scenario, "case": s.row.case, "mode": s.row.mode,
                "metric": s.row.metric, "node": s.node, "device": s.device, "median": s.median,
                "ci_low": s.ci_low, "ci_high": s.ci_high, "fleet_median": s.fleet_median,
                "vs_fleet": s.vs_fleet, "history_median": s.history_median, "vs_history": s.vs_history,
                "outlier": s.outlier,
            }
            for s in report.scores
        ]
    )  # fmt: skip


def fleet_table(report: FleetReport) -> Table:
    table = Table(title=f"fleet: {report.members} node GPUs, outlier above +{report.threshold:.0%}")
    for header in ("node", "row", "metric", "median", "fleet median", "vs fleet", "vs own history", ""):
        table.add_column(header, justify="left" if header in ("node", "row", "metric") else "right")
    for s in sorted(report.scores, key=lambda s: (s.row.label, s.node, s.device or 0)):
        table.add_row(
            literal(_member(s.node, s.device)), literal(s.row.label), s.row.metric, f"{s.median:.4g}",
            f"{s.fleet_median:.4g}", _pct(s.vs_fleet), _pct(s.vs_history), "[red]outlier[/]" if s.outlier else "",
        )  # fmt: skip
    return table


def outlier_line(outlier: Outlier) -> str:
    """'node3 GPU 0: eager empty launch +50.0% (9.75 vs fleet 6.50 wall_us_per_launch); differs: governor powersave (fleet: performance)'."""
    rows = "; ".join(
        f"{s.row.label} {_pct(s.vs_fleet)} ({s.median:.3g} vs fleet {s.fleet_median:.3g} {s.row.metric})"
        for s in outlier.scores
    )
    differs = ", ".join(f"{d.field} {d.value} (fleet: {d.fleet})" for d in outlier.differences)
    return f"{_member(outlier.node, outlier.device)}: {rows}; " + (
        f"differs: {differs}" if differs else "no recorded environment entry differs"
    )


def _strip(ax: Axes, scores: list[Score]) -> None:
    rng = np.random.default_rng(0)  # the same jitter every time
    xs = rng.uniform(-0.15, 0.15, len(scores))
    for x, s in zip(xs, scores):
        colour = VERMILLION if s.outlier else BLUE
        ax.errorbar(
            x,
            s.median,
            yerr=[[s.median - s.ci_low], [s.ci_high - s.median]],
            fmt="o",
            color=colour,
            ms=5,
            lw=1,
        )
        if s.outlier:
            ax.annotate(
                _member(s.node, s.device),
                (x, s.median),
                xytext=(6, 0),
                textcoords="offset points",
                color=colour,
                fontsize=8,
                va="center",
            )
    ax.axhline(scores[0].fleet_median, color=GREY, ls="--", lw=1, label="fleet median")
    ax.set_xlim(-0.6, 0.6)
    ax.set_xticks([])


def figure_fleet(report: FleetReport, title: str) -> Figure:
    """A strip plot per key row: each member's median with its 95% interval, the fleet median dashed,
    outliers in vermillion and labelled."""
    rows = [r for r in report.rows if any(s.row == r for s in report.scores)]
    fig = Figure(figsize=(max(3.0 * len(rows), 4.0), 4.2), dpi=100, layout="constrained")
    axes = fig.subplots(1, max(len(rows), 1), squeeze=False)[0]
    for ax, row in zip(axes, rows):
        _strip(ax, [s for s in report.scores if s.row == row])
        ax.set_title(f"{row.label}\n{row.case} {row.mode}", fontsize=9)
        ax.set_ylabel(row.metric.replace("_us_", " µs ").replace("_", " "))
    fig.suptitle(title, fontsize=10)
    if rows:  # above the panels, never over the data
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside upper right", fontsize=8, frameon=False)
    return fig
