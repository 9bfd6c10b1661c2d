"""Markdown of a comparison or a check report: for pull-request comments and $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateCheck, GateReport
from launchbench.printable import visible
from launchbench.report.compare_console import failure_parts
from launchbench.report.comparison_table import (
    RowLine,
    change_cell,
    extra_cell,
    level_notes,
    metric_header,
    row_detail,
    row_lines,
)
from launchbench.results.environment import describe_environment

VERDICT_MARK = {
    "slower": "🔴 slower",
    "faster": "🟢 faster",
    "same": "same",
    "uncertain": "🟡 uncertain",
    "missing": "⚪ missing",
    "failed": "⚫ failed",
}


def _cell(text: object) -> str:
    return visible(str(text).replace("\n", " ")).replace("|", "\\|")


def _table(table_lines: Sequence[RowLine], metrics: Sequence[str], gate: bool) -> list[str]:
    """One line per row: per metric its change and verdict and the CI, then the gate and the detail."""
    headers = ["scenario/case", "mode"]
    for metric in metrics:
        headers += [metric_header(metric), "95% CI"]
    headers += [*(["gate"] if gate else []), "detail"]
    out = [
        "| " + " | ".join(headers) + " |",
        "|---|---|" + "---:|---:|" * len(metrics) + ("---|" if gate else "") + "---|",
    ]
    for line in table_lines:
        cells = [f"{line.row.scenario}/{line.row.case}", line.row.mode]
        for mc in line.metrics:
            change, verdict = change_cell(mc)
            cells += [f"{change} {VERDICT_MARK.get(verdict, verdict)}".strip(), extra_cell(mc, "ci")]
        cells += [*([line.gate] if gate else []), row_detail(line)]
        out.append("| " + " | ".join(_cell(text) for text in cells) + " |")
    return out


def _check_lines(checks: Iterable[GateCheck], mark: str) -> list[str]:
    return [f"- {mark} `{_cell(c.subject)}` `{c.rule}`: {_cell(c.message)}" for c in checks]


def _capped(
    table_lines: list[RowLine], metrics: Sequence[str], gate: bool, max_rows: int | None
) -> list[str]:
    if max_rows is None or len(table_lines) <= max_rows:
        return _table(table_lines, metrics, gate)
    more = len(table_lines) - max_rows
    shown = _table(table_lines[:max_rows], metrics, gate)
    return [*shown, "", f"… and {more} more (see the csv or json output)"]


def _gate_sections(report: GateReport) -> list[str]:
    """The gate's checks by what they say: regressions, rows that cannot see their rule, missing rows,
    what the gate failed to cover, improvements; then the notes. Every failed check is named."""
    failures = report.failures
    sections = [
        ("Regressions", [c for c in failures if c.kind == "regression"], "❌"),
        (
            "Cannot see the rule (blind: fails the gate; --allow-blind allows it)",
            [c for c in failures if c.kind == "blind"],
            "🙈",
        ),
        ("Missing rows", [c for c in failures if c.kind == "missing"], "⚪"),
        ("Measured in a disturbed state", [c for c in failures if c.kind == "disturbed"], "⚠️"),
        (
            "Gate coverage",
            [c for c in failures if c.kind not in ("regression", "blind", "missing", "disturbed")],
            "❌",
        ),
        ("Improvements", list(report.improvements), "✅"),
        ("Cannot see the rule (allowed by --allow-blind)", [c for c in report.blind if c.passed], "🙈"),
    ]
    lines: list[str] = []
    for title, checks, mark in sections:
        if checks:
            lines += [f"### {title}", "", *_check_lines(checks, mark), ""]
    if report.notes:
        lines += [f"- {_cell(n)}" for n in report.notes] + [""]
    return lines


def _headline(comparison: Comparison, report: GateReport | None, title: str | None) -> list[str]:
    """The headline (the command, and the gate's outcome where there is one) and the two sides."""
    command = title or ("launchbench ab" if comparison.paired else "launchbench compare")
    if report is None:
        headline = f"## {command}"
    elif report.passed:
        headline = f"## {command}: ✅ no regression"
    else:
        headline = f"## {command}: ❌ {'; '.join(failure_parts(report))}"
    return [
        headline,
        "",
        f"Baseline `{comparison.baseline_label}` → current `{comparison.current_label}`",
        "",
    ]


def _environment(comparison: Comparison) -> list[str]:
    """The environments' differences (or the one environment), then the runs' warnings."""
    diffs = comparison.env_differences
    if diffs:
        lines = ["> [!WARNING]", "> The environments differ:"]
        lines += [f"> - **{d.item}**: `{d.baseline}` → `{d.current}`" for d in diffs]
        lines.append("")
    else:
        lines = [f"Same environment: {describe_environment(comparison.current_env)}", ""]
    if comparison.all_warnings:
        lines += ["> [!WARNING]", *[f"> - {_cell(w)}" for w in comparison.all_warnings], ""]
    return lines


def _verdicts(comparison: Comparison) -> list[str]:
    """The verdict counts, the thresholds and the method, then the rows only one side has."""
    counts = comparison.counts()
    thresholds = ", ".join(
        f"{m} {comparison.settings.threshold(m) * 100:g}%" for m in comparison.settings.metrics
    )
    lines = [
        "Verdicts (row × metric): " + " · ".join(f"{VERDICT_MARK[v]} {n}" for v, n in counts.items() if n),
        "",
        f"<sub>Thresholds: {thresholds}. {_cell(comparison.method_note)}.</sub>",
        "",
    ]
    for side in ("baseline", "current"):
        only = comparison.only_in(side)
        if only:
            lines.append(
                f"Only in the {side} ({len(only)}): " + ", ".join(f"`{_cell(r.label)}`" for r in only)
            )
            lines.append("")
    return lines


def comparison_markdown(
    comparison: Comparison,
    report: GateReport | None = None,
    max_rows: int | None = None,
    title: str | None = None,
) -> str:
    """Headline, environment differences, verdict counts, gate results, changed rows, then all rows.
    ``max_rows`` caps each table (a GitHub step summary holds at most 1 MiB); ``title`` names the
    headline's comparison (default: the command)."""
    lines = [*_headline(comparison, report, title), *_environment(comparison), *_verdicts(comparison)]
    if report is not None:
        lines += _gate_sections(report)
    notes = level_notes(comparison)
    if notes:
        lines += ["### Host levels", "", *[f"- {_cell(n)}" for n in notes], ""]
    every = row_lines(comparison, report)
    changed = [line for line in every if any(m is None or m.verdict != "same" for m in line.metrics)]
    gate, metrics = report is not None, comparison.settings.metrics
    if changed:
        lines += ["### Not the same", "", *_capped(changed, metrics, gate, max_rows), ""]
    lines += [
        "<details><summary>All rows</summary>",
        "",
        *_capped(every, metrics, gate, max_rows),
        "",
        "</details>",
        "",
    ]
    return "\n".join(lines)


def check_markdown(report: GateReport) -> str:
    """One line per expectation and row it matched."""
    total, failed = len(report.checks), len(report.failures)
    head = "✅ every expectation holds" if report.passed else f"❌ {failed} of {total} checks failed"
    lines = [f"## launchbench check: {head}", ""]
    lines += ["| | row | expectation | result |", "|---|---|---|---|"]
    for c in report.checks:
        lines.append(
            f"| {'✅' if c.passed else '❌'} | `{_cell(c.subject)}` | `{_cell(c.rule)}` | {_cell(c.message)} |"
        )
    lines.append("")
    lines += [f"- {_cell(n)}" for n in report.notes]
    return "\n".join(lines) + "\n"
