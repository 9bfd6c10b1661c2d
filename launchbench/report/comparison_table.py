"""The comparison table, defined once: its columns, their headers and how each cell reads.

One line per (row, metric) of a Comparison. Every output format renders these same columns:
the console and markdown tables show the columns that have a header, with their text; CSV and JSON
hold every column that has a key, with its value (numbers in µs or percent, unrounded); JUnit writes
the text of the shown columns into each testcase.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from launchbench.analysis.compare import Comparison, MetricComparison, RowComparison
from launchbench.analysis.formatting import (
    format_change,
    format_change_ci,
    format_mde,
    format_number,
    format_p,
)
from launchbench.analysis.gate import GateReport

MISSING = "—"


@dataclass(frozen=True)
class Line:
    """One line of the table: a row of the comparison, one of its metrics, and the gate's word on it."""

    row: RowComparison
    metric: MetricComparison
    gate: str  # "fail", "pass" or "" (no rule applies)


@dataclass(frozen=True)
class Column:
    """``key``: the name in CSV/JSON (None: text tables only); ``header``: the title in text tables (None: data
    formats only); ``value``: the raw value; ``text``: how the cell reads."""

    key: str | None
    header: str | None
    value: Callable[[Line], Any]
    text: Callable[[Line], str] | None = None
    justify: Literal["left", "right"] = "left"
    gate_only: bool = False  # shown in text tables only when gate rules were given

    def cell(self, line: Line) -> str:
        return self.text(line) if self.text is not None else str(self.value(line))


def _pct(x: float) -> float:
    return x * 100


def _verdict_text(line: Line) -> str:
    mc = line.metric
    if mc.compared:
        return mc.verdict
    detail = mc.detail or line.row.detail
    return f"{mc.verdict} ({detail})" if detail else mc.verdict


COLUMNS: tuple[Column, ...] = (
    Column(None, "scenario/case", lambda x: f"{x.row.scenario}/{x.row.case}"),
    Column("scenario", None, lambda x: x.row.scenario),
    Column("case", None, lambda x: x.row.case),
    Column("mode", "mode", lambda x: x.row.mode),
    Column("metric", "metric", lambda x: x.metric.metric),
    Column(
        "baseline_median_us",
        "baseline µs",
        lambda x: x.metric.baseline_median,
        lambda x: format_number(x.metric.baseline_median, MISSING),
        "right",
    ),
    Column(
        "current_median_us",
        "current µs",
        lambda x: x.metric.current_median,
        lambda x: format_number(x.metric.current_median, MISSING),
        "right",
    ),
    Column("delta_us", None, lambda x: x.metric.delta),
    Column("ratio", None, lambda x: x.metric.ratio),
    Column(
        "change_pct",
        "change",
        lambda x: _pct(x.metric.change),
        lambda x: format_change(x.metric.change, MISSING),
        "right",
    ),
    Column(
        None,
        "95% CI",
        lambda x: x.metric.change_ci,
        lambda x: format_change_ci(*x.metric.change_ci, MISSING),
        "right",
    ),
    Column("change_ci_low_pct", None, lambda x: _pct(x.metric.change_ci[0])),
    Column("change_ci_high_pct", None, lambda x: _pct(x.metric.change_ci[1])),
    Column(
        "p_value", "p", lambda x: x.metric.p_value, lambda x: format_p(x.metric.p_value, MISSING), "right"
    ),
    Column(
        "mde_pct", "MDE", lambda x: _pct(x.metric.mde), lambda x: format_mde(x.metric.mde, MISSING), "right"
    ),
    Column("significant", None, lambda x: x.metric.significant),
    Column("threshold_pct", None, lambda x: _pct(x.metric.threshold)),
    Column("n_baseline", None, lambda x: x.metric.n_baseline),
    Column("n_current", None, lambda x: x.metric.n_current),
    Column("passes_baseline", None, lambda x: x.metric.passes_baseline),
    Column("passes_current", None, lambda x: x.metric.passes_current),
    Column("baseline_status", None, lambda x: x.row.baseline_status or ""),
    Column("current_status", None, lambda x: x.row.current_status or ""),
    Column("verdict", "verdict", lambda x: x.metric.verdict, _verdict_text),
    Column("gate", "gate", lambda x: x.gate, gate_only=True),
    Column("detail", None, lambda x: x.metric.detail or x.row.detail),
    Column("levels", None, lambda x: x.metric.levels),
)

DATA_COLUMNS: tuple[Column, ...] = tuple(c for c in COLUMNS if c.key is not None)
DATA_KEYS: tuple[str, ...] = tuple(c.key for c in DATA_COLUMNS if c.key is not None)


def text_columns(gate: bool) -> tuple[Column, ...]:
    """The columns a console or markdown table shows (the gate column only when rules were given)."""
    return tuple(c for c in COLUMNS if c.header is not None and (gate or not c.gate_only))


def lines(comparison: Comparison, report: GateReport | None = None) -> Iterator[Line]:
    for row in comparison.rows:
        for mc in row.metrics:
            yield Line(row, mc, "" if report is None else report.verdict_for(row.key, mc.metric))


def records(comparison: Comparison, report: GateReport | None = None) -> list[dict[str, Any]]:
    """One record per line, keyed by DATA_KEYS in order."""
    return [{c.key: c.value(line) for c in DATA_COLUMNS} for line in lines(comparison, report)]  # type: ignore[misc]


def level_notes(comparison: Comparison) -> list[str]:
    """One line per row with a host-level note (analysis.host_levels.comparison_note): its first noted
    metric's note, and which other metrics have one."""
    out = []
    for row in comparison.rows:
        noted = [mc for mc in row.metrics if mc.levels]
        if noted:
            also = f" (also {', '.join(mc.metric for mc in noted[1:])})" if len(noted) > 1 else ""
            out.append(f"{row.label} {noted[0].metric}: {noted[0].levels}{also}")
    return out


def summary(line: Line) -> str:
    """The line as one sentence of 'header text' pairs (JUnit testcases)."""
    shown = [
        c for c in text_columns(gate=False) if c.header not in ("scenario/case", "mode", "metric", "verdict")
    ]
    counts = (
        f"n {line.metric.n_baseline}/{line.metric.n_current}, passes {line.metric.passes_baseline}/"
        f"{line.metric.passes_current}, threshold {_pct(line.metric.threshold):g}%"
    )
    detail = line.metric.detail or line.row.detail
    said = f"; {detail}" if detail and line.metric.compared else ""
    return (
        f"{_verdict_text(line)}: "
        + ", ".join(f"{c.header} {c.cell(line)}" for c in shown)
        + f"; {counts}{said}"
    )


# ------------------------------------------------------------------ one line per row: the text tables


@dataclass(frozen=True)
class RowLine:
    """One row (scenario, case, mode) of a comparison with every chosen metric, as the console and
    markdown tables show it: a change-and-verdict cell per metric, then the CI, p and MDE where there is
    room."""

    row: RowComparison
    metrics: tuple[MetricComparison | None, ...]  # in the settings' order; None: the row lacks it
    gate: str  # "fail" where a rule failed on any metric of the row, "pass" where one passed, else ""


Extra = Literal["ci", "p", "mde"]
EXTRAS: tuple[Extra, ...] = ("ci", "p", "mde")  # the cells shown where the width allows, kept in this order
EXTRA_HEADERS: dict[Extra, str] = {"ci": "95% CI", "p": "p", "mde": "MDE"}


def metric_header(metric: str) -> str:
    """A metric's column title: wall_us_per_launch → 'wall µs/launch', latency_us → 'latency µs'."""
    return metric.replace("_us_per_", " µs/").replace("_us", " µs").replace("_", " ")


def row_lines(comparison: Comparison, report: GateReport | None = None) -> list[RowLine]:
    out = []
    for row in comparison.rows:
        words = {report.verdict_for(row.key, m.metric) for m in row.metrics} if report is not None else set()
        gate = "fail" if "fail" in words else "pass" if "pass" in words else ""
        out.append(RowLine(row, tuple(row.metric(m) for m in comparison.settings.metrics), gate))
    return out


def change_cell(mc: MetricComparison | None) -> tuple[str, str]:
    """(change, verdict) of one metric of a row: '+9.8%', 'slower'."""
    if mc is None:
        return MISSING, "—"
    return format_change(mc.change, MISSING) if mc.compared else "", mc.verdict


def extra_cell(mc: MetricComparison | None, extra: Extra) -> str:
    if mc is None or not mc.compared:
        return ""
    if extra == "ci":
        return format_change_ci(*mc.change_ci, MISSING, sep=" to ")
    if extra == "p":
        return format_p(mc.p_value, MISSING)
    return format_mde(mc.mde, MISSING)


def row_detail(line: RowLine) -> str:
    """The row's detail and each metric's own, once each."""
    parts = [line.row.detail] if line.row.detail else []
    for mc in line.metrics:
        if mc is not None and mc.detail and mc.detail not in parts:
            parts.append(mc.detail)
    return "; ".join(parts)
