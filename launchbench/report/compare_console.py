"""A comparison and a gate report as rich text: for the terminal, for CI logs and for `--format table` files."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateReport, blind_summary
from launchbench.printable import visible
from launchbench.report.comparison_table import level_notes, lines, text_columns
from launchbench.report.console import plain_console
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


def _styled(text: str, style: str | None) -> str:
    return f"[{style}]{escape(visible(text))}[/]" if style and text else escape(visible(text))


def comparison_table(comparison: Comparison, report: GateReport | None) -> Table:
    """The verdict table: report.comparison_table's text columns, one section per row of the comparison."""
    columns = text_columns(gate=report is not None)
    title = f"{escape(comparison.baseline_label)} → {escape(comparison.current_label)}"
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column.header or "", justify=column.justify)
    previous = None
    for line in lines(comparison, report):
        if previous is not None and previous is not line.row and len(previous.metrics) > 1:
            table.add_section()
        first = previous is not line.row
        cells = []
        for column in columns:
            text = column.cell(line)
            if column.header in ("scenario/case", "mode") and not first:
                text = ""  # said once per row
            style = {
                "verdict": VERDICT_STYLE.get(line.metric.verdict),
                "gate": GATE_STYLE.get(line.gate),
            }.get(column.key or "")
            cells.append(_styled(text, style))
        table.add_row(*cells)
        previous = line.row
    return table


def render_comparison(console: Console, comparison: Comparison, report: GateReport | None) -> None:
    """The comparison as rich text: environment, verdict table, rows on one side only, gate outcome."""
    diffs = comparison.env_differences
    if diffs:
        body = "\n".join(
            f"[bold]{escape(d.item)}[/]: {escape(d.baseline)} → {escape(d.current)}" for d in diffs
        )
        style = "red" if comparison.different_gpu else "yellow"
        console.print(Panel(body, title="The environments differ", border_style=style, expand=False))
    else:
        console.print(f"[dim]Same environment: {escape(describe_environment(comparison.current_env))}[/]")
    console.print(comparison_table(comparison, report))
    notes = level_notes(comparison)
    if notes:
        console.print(f"[yellow]Host levels ({len(notes)} rows):[/]")
        for note in notes:
            console.print(f"  {escape(note)}")
    for side in ("baseline", "current"):
        only = comparison.only_in(side)
        if only:
            names = ", ".join(escape(r.label) for r in only)
            console.print(f"[magenta]Only in the {side} ({len(only)}):[/] {names}")
    counts = comparison.counts()
    console.print(
        "Verdicts: "
        + ", ".join(f"[{VERDICT_STYLE[v]}]{v} {n}[/]" for v, n in counts.items() if n)
        + f"  [dim]({escape(comparison.method_note)})[/]"
    )
    if report is not None:
        render_report(console, report, "regression")


def render_report(console: Console, report: GateReport, what: str, list_checks: bool = True) -> None:
    """Notes, improvements and failures (unless a table showed them already), then PASS or FAIL."""
    for note in report.notes:
        console.print(f"[dim]note: {escape(visible(note))}[/]")
    if list_checks:
        for check in report.improvements:
            console.print(
                f"[green]improved[/] {escape(visible(check.subject))} ({escape(check.rule)}): {escape(visible(check.message))}"
            )
        for check in report.blind:
            if check.passed:
                console.print(
                    f"[yellow]blind[/] {escape(visible(check.subject))} {escape(check.rule)}: {escape(visible(check.message))}"
                )
        for check in report.failures:
            kind = f" ({check.kind})" if check.kind in ("blind", "missing", "disturbed") else ""
            console.print(
                f"[bold red]FAIL{kind}[/] {escape(visible(check.subject))} {escape(check.rule)}: {escape(visible(check.message))}"
            )
    console.print(_styled(outcome_line(report, what), "bold green" if report.passed else "bold red"))


def render_checks(console: Console, report: GateReport) -> None:
    """The expectations table (one line per check), then the outcome."""
    table = Table(title="expectations", title_justify="left")
    for name in ("", "row", "expectation", "result"):
        table.add_column(name)
    for check in report.checks:
        mark = "[green]pass[/]" if check.passed else "[bold red]FAIL[/]"
        table.add_row(
            mark, escape(visible(check.subject)), escape(check.rule), escape(visible(check.message))
        )
    console.print(table)
    render_report(console, report, "failed expectation", list_checks=False)


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


def render_text(render: Callable[[Console], None]) -> str:
    """What ``render`` prints, as plain text with no cell cut (for `--format table` files)."""
    buffer = StringIO()
    render(plain_console(buffer))
    return buffer.getvalue()
