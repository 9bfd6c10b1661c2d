"""A comparison and a gate report as rich text: for the terminal, for CI logs and for `--format table` files."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from io import StringIO
from typing import NamedTuple

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.panel import Panel
from rich.segment import Segments
from rich.table import Table

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateReport, blind_summary
from launchbench.printable import visible
from launchbench.report.comparison_table import (
    EXTRA_HEADERS,
    EXTRAS,
    Extra,
    RowLine,
    change_cell,
    extra_cell,
    level_notes,
    metric_header,
    row_detail,
    row_lines,
)
from launchbench.report.plain_table import ColumnSpec, plain_rendered, rich_table
from launchbench.report.terminal import Rendered, literal, plain_console, rendered
from launchbench.results.environment import describe_environment

VERDICT_STYLE = {
    "slower": "bold red",
    "faster": "bold green",
    "same": "dim",
    "uncertain": "yellow",
    "missing": "magenta",
    "failed": "magenta",
}
GATE_STYLE = {"fail": "bold red", "pass": "green"}
DETAIL_WIDTH = 32  # narrowest detail column; narrower, the detail goes under the table


@dataclass(frozen=True)
class Layout:
    """What a comparison table shows: the extra cells per metric (CI, p, MDE) and whether the change
    and the verdict share one line or stack in two."""

    extras: tuple[Extra, ...]
    stacked: bool = False
    detail_below: bool = False  # the rows' detail as lines under the table, not as its last column
    short_case: bool = False  # the case without its scenario (the title names the one scenario)


# widest first: the CI, p and MDE go first, then the detail moves under the table, then the change and
# the verdict stack, then the scenario moves to the title; the case, the numbers and the verdicts stay
LAYOUTS: tuple[Layout, ...] = (
    Layout(EXTRAS),
    Layout(("ci", "mde")),
    Layout(("ci",)),
    Layout(()),
    Layout((), detail_below=True),
    Layout((), stacked=True, detail_below=True),
    Layout((), stacked=True, detail_below=True, short_case=True),
)


class Cell(NamedTuple):
    """A table cell: its rich markup and its text as printed (a named tuple: a table of thousands of rows
    makes tens of thousands of them per layout)."""

    markup: str
    text: str

    @classmethod
    def of(cls, text: str, style: str | None = None) -> Cell:
        """``text`` (its control characters made visible), in ``style`` where given."""
        shown = visible(text)
        return cls(f"[{style}]{literal(shown)}[/]" if style and shown else literal(shown), shown)

    def then(self, other: Cell) -> Cell:
        """This cell's text followed by ``other``'s."""
        return Cell(self.markup + other.markup, self.text + other.text)


def text_measurement(text: str) -> Measurement:
    """How rich measures a cell of this text: its longest word and its longest line, in cells."""
    widest = max(map(cell_len, text.splitlines()), default=0)
    words = text.split()
    return Measurement(max(map(cell_len, words)) if words else widest, widest)


@dataclass(frozen=True)
class VerdictTable:
    """A verdict table before rich lays it out: its title, box, columns and each row's cells."""

    title: str
    stacked: bool
    columns: tuple[ColumnSpec, ...]
    rows: tuple[tuple[Cell, ...], ...]

    @property
    def box(self) -> box.Box:
        return box.SIMPLE_HEAD if self.stacked else box.ROUNDED

    def table(self, rows: Iterable[int] | None = None) -> Table:
        """The rich table of every row, or of the rows at the indexes ``rows``."""
        indexes = range(len(self.rows)) if rows is None else rows
        return rich_table(
            self.title, self.box, self.columns, ([c.markup for c in self.rows[i]] for i in indexes)
        )

    def laid_out(self, console: Console) -> Rendered:
        """The whole table laid out on ``console``: written directly where it prints text only and every
        column gets its natural width (plain_table), else by rich."""
        texts = [[cell.text for cell in cells] for cells in self.rows]
        fast = plain_rendered(console, self.title, self.box, self.columns, texts)
        return fast if fast is not None else rendered(console, self.table())

    def widest_rows(self, measure: Callable[[str], Measurement]) -> list[int]:
        """The rows that decide whether the table fits: in each column the one with the widest cell and
        the one with the longest unbroken word (rich sizes a column by those two alone and cuts the
        widest cells first), and any row whose text holds an ellipsis of its own."""
        picked = {i for i, cells in enumerate(self.rows) if any("…" in cell.text for cell in cells)}
        for column in range(len(self.columns)):
            sizes = [measure(cells[column].text) for cells in self.rows]
            if sizes:
                picked.add(max(range(len(sizes)), key=lambda i: sizes[i].maximum))
                picked.add(max(range(len(sizes)), key=lambda i: sizes[i].minimum))
        return sorted(picked)


def verdict_table(
    comparison: Comparison, report: GateReport | None, layout: Layout, lines: Sequence[RowLine]
) -> VerdictTable:
    """The verdict table of ``layout`` for the comparison's ``lines`` (row_lines): one line per row
    (scenario/case, mode), per metric its change and verdict and the layout's extra cells, then the
    gate's word and the row's detail."""
    title = f"{literal(comparison.baseline_label)} → {literal(comparison.current_label)}"
    scenarios = {row.scenario for row in comparison.rows}
    short = layout.short_case and len(scenarios) == 1
    if short:
        title += f" (scenario {literal(next(iter(scenarios)))})"
    if report is not None and layout.stacked:
        title += "; the gate's FAIL or pass under the mode"
    columns = [ColumnSpec("case" if short else "scenario/case"), ColumnSpec("mode")]
    for metric in comparison.settings.metrics:
        columns.append(ColumnSpec(metric_header(metric), justify="right"))
        columns += [ColumnSpec(EXTRA_HEADERS[extra], justify="right") for extra in layout.extras]
    gate_column = report is not None and not layout.stacked  # stacked: the gate's word under the mode
    if gate_column:
        columns.append(ColumnSpec("gate"))
    details = not layout.detail_below and any(row_detail(line) for line in lines)
    if details:
        columns.append(ColumnSpec("detail", overflow="fold", no_wrap=False, min_width=DETAIL_WIDTH))
    rows = tuple(_row_cells(line, layout, short, report, gate_column, details) for line in lines)
    return VerdictTable(title, layout.stacked, tuple(columns), rows)


def _row_cells(
    line: RowLine, layout: Layout, short: bool, report: GateReport | None, gate_column: bool, details: bool
) -> tuple[Cell, ...]:
    case = line.row.case if short else f"{line.row.scenario}/{line.row.case}"
    mode = Cell.of(line.row.mode)
    if report is not None and layout.stacked and line.gate:
        gate_word = "FAIL" if line.gate == "fail" else line.gate
        mode = mode.then(Cell("\n", "\n")).then(Cell.of(gate_word, GATE_STYLE.get(line.gate)))
    cells = [Cell.of(case), mode]
    for mc in line.metrics:
        change, verdict = change_cell(mc)
        said = Cell.of(verdict, VERDICT_STYLE.get(verdict))
        joined = "\n" if layout.stacked else " "
        cells.append(Cell(literal(change) + joined, change + joined).then(said) if change else said)
        cells += [Cell(literal(text), text) for text in (extra_cell(mc, extra) for extra in layout.extras)]
    if gate_column:
        cells.append(Cell.of(line.gate, GATE_STYLE.get(line.gate)))
    if details:
        cells.append(Cell.of(row_detail(line)))
    return tuple(cells)


@dataclass(frozen=True)
class FittedTable:
    """A verdict table rendered once at its console's width: the segments to print and the layout."""

    segments: Segments
    layout: Layout


def fitted_table(console: Console, comparison: Comparison, report: GateReport | None) -> FittedTable:
    """The widest layout whose table fits the console with no cell cut (the last one otherwise). A layout
    is tried on its widest rows first (VerdictTable.widest_rows, each distinct cell's text measured once
    over every layout): where they are cut, so is the whole table, which is then never laid out. Only a
    layout whose widest rows fit is laid out whole, and taken where the whole fits too; on a terminal
    narrower than the widest layout, a table of thousands of rows is laid out once, not once per layout."""
    lines = row_lines(comparison, report)
    measure = functools.cache(text_measurement)
    for layout in LAYOUTS[:-1]:
        parts = verdict_table(comparison, report, layout, lines)
        if rendered(console, parts.table(parts.widest_rows(measure))).fits:
            whole = parts.laid_out(console)
            if whole.fits:
                return FittedTable(whole.segments, layout)
    last = LAYOUTS[-1]
    return FittedTable(verdict_table(comparison, report, last, lines).laid_out(console).segments, last)


def render_comparison(console: Console, comparison: Comparison, report: GateReport | None) -> None:
    """The comparison as rich text: environment, verdict table, rows on one side only, gate outcome."""
    diffs = comparison.env_differences
    if diffs:
        body = "\n".join(
            f"[bold]{literal(d.item)}[/]: {literal(d.baseline)} → {literal(d.current)}" for d in diffs
        )
        style = "red" if comparison.different_gpu else "yellow"
        console.print(Panel(body, title="The environments differ", border_style=style, expand=False))
    else:
        console.print(f"[dim]Same environment: {literal(describe_environment(comparison.current_env))}[/]")
    for warning in comparison.all_warnings:
        console.print(f"[yellow]warning:[/] {literal(visible(warning))}")
    fitted = fitted_table(console, comparison, report)
    console.print(fitted.segments)
    unwrapped = not console.is_terminal  # a log's lines are whole (rich would wrap them at 4,096 cells)
    if fitted.layout.detail_below:
        details = [
            f"[dim]detail:[/] {literal(visible(line.row.label))}: {literal(visible(row_detail(line)))}"
            for line in row_lines(comparison, report)
            if row_detail(line)
        ]
        if details:
            console.print("\n".join(details), soft_wrap=unwrapped)  # one print: a line per row
    notes = level_notes(comparison)
    if notes:
        console.print(f"[yellow]Host levels ({len(notes)} rows):[/]")
        console.print("\n".join(f"  {literal(note)}" for note in notes), soft_wrap=unwrapped)
    for side in ("baseline", "current"):
        only = comparison.only_in(side)
        if only:
            names = ", ".join(literal(r.label) for r in only)
            console.print(f"[magenta]Only in the {side} ({len(only)}):[/] {names}")
    counts = comparison.counts()
    console.print(
        "Verdicts: "
        + ", ".join(f"[{VERDICT_STYLE[v]}]{v} {n}[/]" for v, n in counts.items() if n)
        + f"  [dim]({literal(comparison.method_note)})[/]"
    )
    if report is not None:
        render_report(console, report, "regression")


class Checks(Enum):
    """Where a report's improvements, blind rows and failures are shown: LISTED by render_report, or
    IN_TABLE (a table printed before it showed them already)."""

    LISTED = "listed"
    IN_TABLE = "in-table"


def render_report(console: Console, report: GateReport, what: str, checks: Checks = Checks.LISTED) -> None:
    """Notes, improvements and failures (unless a table showed them already), then PASS or FAIL."""
    for note in report.notes:
        console.print(f"[dim]note: {literal(visible(note))}[/]")
    if checks is Checks.LISTED:
        for check in report.improvements:
            console.print(
                f"[green]improved[/] {literal(visible(check.subject))} ({literal(check.rule)}): {literal(visible(check.message))}"
            )
        for check in report.blind:
            if check.passed:
                console.print(
                    f"[yellow]blind[/] {literal(visible(check.subject))} {literal(check.rule)}: {literal(visible(check.message))}"
                )
        for check in report.failures:
            kind = f" ({check.kind})" if check.kind in ("blind", "missing", "disturbed") else ""
            console.print(
                f"[bold red]FAIL{kind}[/] {literal(visible(check.subject))} {literal(check.rule)}: {literal(visible(check.message))}"
            )
    console.print(Cell.of(outcome_line(report, what), "bold green" if report.passed else "bold red").markup)


def render_checks(console: Console, report: GateReport) -> None:
    """The expectations table (one line per check), then the outcome."""
    table = Table(title="expectations", title_justify="left")
    table.add_column("", no_wrap=True)
    table.add_column("row", no_wrap=True)
    table.add_column("expectation", overflow="fold")
    table.add_column("result", overflow="fold")
    for check in report.checks:
        mark = "[green]pass[/]" if check.passed else "[bold red]FAIL[/]"
        table.add_row(
            mark, literal(visible(check.subject)), literal(check.rule), literal(visible(check.message))
        )
    console.print(table)
    render_report(console, report, "failed expectation", Checks.IN_TABLE)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def failure_parts(report: GateReport) -> list[str]:
    """What failed, in words: '10 of 16 gated rows cannot see 5%', '2 regressions', '1 row missing',
    '1 row measured in a disturbed state', then the other failed checks counted."""
    failures = report.failures
    parts = blind_summary(report) if any(c.kind == "blind" for c in failures) else []
    regressions = sum(c.kind == "regression" for c in failures)
    missing = sum(c.kind == "missing" for c in failures)
    disturbed = sum(c.kind == "disturbed" for c in failures)
    if regressions:
        parts.append(_plural(regressions, "regression"))
    if missing:
        parts.append(f"{_plural(missing, 'row')} missing")
    if disturbed:
        parts.append(f"{_plural(disturbed, 'row')} measured in a disturbed state")
    rest = sum(c.kind not in ("blind", "regression", "missing", "disturbed") for c in failures)
    if rest:
        parts.append(f"{rest} of {len(report.checks)} checks failed" if not parts else f"{rest} more failed")
    return parts


def outcome_line(report: GateReport | None, what: str) -> str:
    """One line: PASS or FAIL, what failed (blind rows per rule, regressions, missing rows) or the number
    of checks (or that no gate rule was given)."""
    if report is None:
        return "no gate rules given (--fail-on): exit 0"
    if report.passed:
        allowed = "".join(f"; {part}, allowed by --allow-blind" for part in blind_summary(report))
        return f"PASS: no {what} ({len(report.checks)} checks{allowed})"
    return "FAIL: " + "; ".join(failure_parts(report))


def verdict_counts(comparison: Comparison) -> str:
    """The one-line outcome of a comparison with no gate: its verdict counts."""
    counts = ", ".join(f"{v} {n}" for v, n in comparison.counts().items() if n) or "no rows"
    return f"verdicts (row × metric): {counts}; no gate rules given (--fail-on): exit 0"


def render_text(render: Callable[[Console], None]) -> str:
    """What ``render`` prints, as plain text with no cell cut (for `--format table` files)."""
    buffer = StringIO()
    render(plain_console(buffer))
    return buffer.getvalue()
