"""One BASELINE against several CURRENT runs (``compare A B C``), laid side by side as
torch.utils.benchmark's Compare does: a line per case and mode, per metric a change-and-verdict column
per CURRENT run. Each pair is its own Comparison and gate report; the data formats hold every pair."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from enum import Enum

from rich import box
from rich.console import Console
from rich.table import Table

from launchbench.analysis.compare import Comparison, RowKey
from launchbench.analysis.gate import GateReport
from launchbench.printable import visible
from launchbench.report.compare_console import VERDICT_STYLE, outcome_line, render_report, verdict_counts
from launchbench.report.comparison_table import change_cell, metric_header
from launchbench.report.documents import ComparisonSeriesDocument
from launchbench.report.markdown import comparison_markdown
from launchbench.report.tables import comparison_document, comparison_frame
from launchbench.report.terminal import literal, rendered

Pair = tuple[Comparison, GateReport | None]


def _keys(pairs: Sequence[Pair]) -> list[tuple[RowKey, str]]:
    """Every (row key, label) of any pair, in the order first seen."""
    seen: dict[RowKey, str] = {}
    for comparison, _ in pairs:
        for row in comparison.rows:
            seen.setdefault(row.key, f"{row.scenario}/{row.case}")
    return list(seen.items())


class Cells(Enum):
    """How a series table's change cells are laid out: the change and its verdict on ONE_LINE, or
    STACKED on two lines (a lighter box) where the width asks."""

    ONE_LINE = "one-line"
    STACKED = "stacked"


def series_table(pairs: Sequence[Pair], cells_as: Cells = Cells.ONE_LINE) -> Table:
    stacked = cells_as is Cells.STACKED
    first = pairs[0][0]
    table = Table(
        title=f"baseline {literal(first.baseline_label)}; columns: " + ", ".join(
            f"({i}) {literal(c.current_label)}" for i, (c, _) in enumerate(pairs, 1)
        ),
        title_justify="left",
        box=box.SIMPLE_HEAD if stacked else box.ROUNDED,
    )  # fmt: skip
    table.add_column("scenario/case", no_wrap=True)
    table.add_column("mode", no_wrap=True)
    for metric in first.settings.metrics:
        for i in range(1, len(pairs) + 1):
            table.add_column(f"{metric_header(metric)} ({i})", justify="right", no_wrap=not stacked)
    rows = [{row.key: row for row in comparison.rows} for comparison, _ in pairs]
    for key, label in _keys(pairs):
        cells = [literal(visible(label)), literal(key[2])]
        for metric in first.settings.metrics:
            for by_key in rows:
                row = by_key.get(key)
                change, verdict = change_cell(row.metric(metric) if row is not None else None)
                word = f"[{VERDICT_STYLE[verdict]}]{verdict}[/]" if verdict in VERDICT_STYLE else verdict
                cells.append(f"{literal(change)}{chr(10) if stacked else ' '}{word}" if change else word)
        table.add_row(*cells)
    return table


def render_series(console: Console, pairs: Sequence[Pair]) -> None:
    """The side-by-side table (stacked cells where the width asks), then each pair's warnings, verdict
    counts and gate outcome."""
    table = rendered(console, series_table(pairs))
    console.print(table.segments if table.fits else series_table(pairs, Cells.STACKED))
    for i, (comparison, report) in enumerate(pairs, 1):
        console.print(f"[bold]({i}) {literal(comparison.current_label)}[/]")
        for warning in comparison.all_warnings:
            console.print(f"  [yellow]warning:[/] {literal(visible(warning))}")
        if report is None:
            console.print(f"  {literal(verdict_counts(comparison))}")
        else:
            render_report(console, report, "regression")


def series_outcome(pairs: Sequence[Pair]) -> str:
    """One line: each CURRENT run's outcome."""
    parts = []
    for i, (comparison, report) in enumerate(pairs, 1):
        said = outcome_line(report, "regression") if report is not None else verdict_counts(comparison)
        parts.append(f"({i}) {comparison.current_label}: {said}")
    return " | ".join(parts)


def series_markdown(pairs: Sequence[Pair], max_rows: int | None = None) -> str:
    return "\n".join(comparison_markdown(c, r, max_rows=max_rows) for c, r in pairs)


def series_csv(pairs: Sequence[Pair]) -> str:
    """compare's CSV of each pair, a leading ``current`` column naming the CURRENT run."""
    import pandas as pd  # only for the CSV: the other formats load no pandas

    frames = [comparison_frame(c, r).assign(current=c.current_label) for c, r in pairs]
    frame = pd.concat(frames, ignore_index=True)
    return frame[["current", *frame.columns[:-1]]].to_csv(index=False)


def series_document(pairs: Sequence[Pair]) -> ComparisonSeriesDocument:
    return ComparisonSeriesDocument(
        baseline=pairs[0][0].baseline_label, comparisons=[comparison_document(c, r) for c, r in pairs]
    )


def series_json(pairs: Sequence[Pair]) -> str:
    return series_document(pairs).model_dump_json(indent=1) + "\n"


def series_junit(pairs: Sequence[Pair]) -> str:
    """Each pair's JUnit testsuite, named by its CURRENT run, in one document."""
    from launchbench.report.junit import comparison_junit

    root = ET.Element("testsuites", {"name": "launchbench"})
    totals = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    for comparison, report in pairs:
        suite = ET.fromstring(comparison_junit(comparison, report).split("?>", 1)[1]).find("testsuite")
        assert suite is not None
        suite.set("name", f"launchbench compare {comparison.current_label}")
        for key in totals:
            totals[key] += int(suite.get(key, "0"))
        root.append(suite)
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
