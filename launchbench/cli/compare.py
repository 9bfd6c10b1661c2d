"""compare and check commands: parse, make the library call (compare.py, gate.py), render, map to an exit code.

Exit codes: 0 pass; 1 a regression under a --fail-on rule (or a failed expectation); 2 usage or input error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from launchbench.analysis.compare import (
    DEFAULT_ALPHA,
    DEFAULT_METRICS,
    DEFAULT_THRESHOLD,
    CompareSettings,
    CompareSettingsError,
    Comparison,
    compare_runs,
    parse_threshold,
)
from launchbench.analysis.coverage import (
    CoveragePolicy,
    check_coverage,
    comparison_coverage,
    scenario_differences,
    unfinished,
)
from launchbench.analysis.formatting import (
    format_change,
    format_change_ci,
    format_mde,
    format_number,
    format_p,
)
from launchbench.analysis.gate import (
    GateReport,
    GateRule,
    GateRuleError,
    check_against_scenarios,
    evaluate_rules,
    parse_rule,
)
from launchbench.cli.common import EXIT_FAIL, EXIT_OK, handle_errors
from launchbench.files import OutputError, atomic_write_text, check_output_file
from launchbench.report.junit import comparison_junit, report_junit
from launchbench.report.markdown import check_markdown, comparison_markdown
from launchbench.report.tables import comparison_csv, comparison_json, report_json
from launchbench.results.environment import describe_environment
from launchbench.results.schema import METRIC_BY_NAME
from launchbench.results.store import load_run, resolve_results_file

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
VERDICT_STYLE = {
    "slower": "bold red",
    "faster": "bold green",
    "same": "dim",
    "uncertain": "yellow",
    "missing": "magenta",
    "failed": "magenta",
}
STEP_SUMMARY_ROWS = 500  # per table: GitHub keeps at most 1 MiB of step summary
TABLE_WIDTH = 160  # when stdout is not a terminal (CI logs, files)


# ------------------------------------------------------------------------------------------ parsing


def _parse_many(parse: Callable[[str], Any], error: type[Exception]) -> Callable[..., list[Any]]:
    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Any]:
        try:
            return [parse(v) for v in values]
        except error as err:
            raise click.BadParameter(str(err), ctx=ctx, param=param) from None

    return callback


def _settings(metrics: tuple[str, ...], thresholds: list[tuple[str | None, float]], alpha: float, rules: list[GateRule]) -> CompareSettings:
    """A metric named in a ``N%`` rule gets a threshold no larger than N%: the gate fails only rows whose
    verdict is slower, so a rule tighter than the threshold would otherwise never fire."""
    chosen = tuple(dict.fromkeys([*(metrics or DEFAULT_METRICS), *(r.metric for r in rules)]))
    default = next((v for m, v in reversed(thresholds) if m is None), DEFAULT_THRESHOLD)
    per_metric = {m: v for m, v in thresholds if m is not None}
    for rule in rules:
        if rule.unit == "%":
            per_metric[rule.metric] = min(per_metric.get(rule.metric, default), rule.amount)
    return CompareSettings(metrics=chosen, default_threshold=default, thresholds=per_metric, alpha=alpha)


# ----------------------------------------------------------------------------------------- rendering


def _console(file: Any = None) -> Console:
    console = Console(file=file, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(file=file, highlight=False, soft_wrap=False, width=TABLE_WIDTH, color_system=None)
    return console




def _gate_cell(report: GateReport | None, key: tuple[str, str, str], metric: str) -> str:
    if report is None:
        return ""
    return {"fail": "[bold red]FAIL[/]", "pass": "[green]pass[/]", "": ""}[report.verdict_for(key, metric)]


def render_comparison(console: Console, comparison: Comparison, report: GateReport | None) -> None:
    """The comparison as rich text: environment, verdict table, rows on one side only, gate outcome."""
    diffs = comparison.env_differences
    if diffs:
        body = "\n".join(f"[bold]{escape(d.item)}[/]: {escape(d.baseline)} → {escape(d.current)}" for d in diffs)
        style = "red" if comparison.different_gpu else "yellow"
        console.print(Panel(body, title="The environments differ", border_style=style, expand=False))
    else:
        console.print(f"[dim]Same environment: {escape(describe_environment(comparison.current_env))}[/]")
    table = Table(title=f"{escape(comparison.baseline_label)} → {escape(comparison.current_label)}", title_justify="left")
    for name, justify in [
        ("scenario/case", "left"),
        ("mode", "left"),
        ("metric", "left"),
        ("baseline µs", "right"),
        ("current µs", "right"),
        ("change", "right"),
        ("95% CI", "right"),
        ("p", "right"),
        ("MDE", "right"),
        ("verdict", "left"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    if report is not None:
        table.add_column("gate")
    for row in comparison.rows:
        for i, mc in enumerate(row.metrics):
            label = escape(f"{row.scenario}/{row.case}") if i == 0 else ""
            mode = row.mode if i == 0 else ""
            verdict = f"[{VERDICT_STYLE[mc.verdict]}]{mc.verdict}[/]"
            if not mc.compared and i == 0:
                verdict += f" [dim]{escape(mc.detail)}[/]"
            cells = [
                label,
                mode,
                mc.metric,
                format_number(mc.baseline_median, "—"),
                format_number(mc.current_median, "—"),
                format_change(mc.change, "—"),
                format_change_ci(*mc.change_ci, "—"),
                format_p(mc.p_value, "—"),
                format_mde(mc.mde, "—"),
                verdict,
            ]
            if report is not None:
                cells.append(_gate_cell(report, row.key, mc.metric))
            table.add_row(*cells)
        if len(row.metrics) > 1:
            table.add_section()
    console.print(table)
    for side in ("baseline", "current"):
        only = comparison.only_in(side)  # type: ignore[arg-type]
        if only:
            names = ", ".join(escape(r.label) for r in only)
            console.print(f"[magenta]Only in the {side} ({len(only)}):[/] {names}")
    counts = comparison.counts()
    console.print(
        "Verdicts: " + ", ".join(f"[{VERDICT_STYLE[v]}]{v} {n}[/]" for v, n in counts.items() if n)
        + f"  [dim]({escape(comparison.method_note)})[/]"
    )
    if report is not None:
        render_report(console, report, "regression")


def render_report(console: Console, report: GateReport, what: str, list_checks: bool = True) -> None:
    """Notes, improvements and failures (unless a table showed them already), then PASS or FAIL."""
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    if list_checks:
        for check in report.improvements:
            console.print(f"[green]improved[/] {escape(check.subject)} ({escape(check.rule)}): {escape(check.message)}")
        for check in report.blind:
            if check.passed:
                console.print(f"[yellow]blind[/] {escape(check.subject)} {escape(check.rule)}: {escape(check.message)}")
        for check in report.failures:
            console.print(f"[bold red]FAIL[/] {escape(check.subject)} {escape(check.rule)}: {escape(check.message)}")
    if report.passed:
        console.print(f"[bold green]PASS[/]: no {what} ({len(report.checks)} checks)")
    else:
        console.print(f"[bold red]FAIL[/]: {len(report.failures)} of {len(report.checks)} checks failed")


def render_checks(console: Console, report: GateReport) -> None:
    table = Table(title="expectations", title_justify="left")
    for name in ("", "row", "expectation", "result"):
        table.add_column(name)
    for check in report.checks:
        mark = "[green]pass[/]" if check.passed else "[bold red]FAIL[/]"
        table.add_row(mark, escape(check.subject), escape(check.rule), escape(check.message))
    console.print(table)
    render_report(console, report, "failed expectation", list_checks=False)


def _render_text(render: Callable[[Console], None]) -> str:
    from io import StringIO

    buffer = StringIO()
    render(Console(file=buffer, width=TABLE_WIDTH, color_system=None, highlight=False, soft_wrap=False))
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------- outputs


OUTPUT_HELP = "Write the output to FILE instead of the terminal (an existing file is replaced atomically; its folder must exist)."
REPLACED = "replaced atomically if it exists; its folder must exist"


def check_outputs(options: list[tuple[str, str | None]], inputs: list[str]) -> dict[str, Path]:
    """Every output path checked before any work: writable folder, not a folder or a special file, not
    one of the inputs, not given to two options."""
    chosen: dict[str, Path] = {}
    seen: dict[str, str] = {}
    input_files = {_same_file_key(resolve_results_file(p)) for p in inputs} | {_same_file_key(Path(p)) for p in inputs}
    for option, value in options:
        if value is None:
            continue
        path = check_output_file(value, option)
        key = _same_file_key(path)
        if key in input_files:
            raise OutputError(f"{option} {value}: is one of the input files; choose another output")
        if key in seen:
            raise OutputError(f"{option} {value}: also given to {seen[key]}; choose another output")
        seen[key] = option
        chosen[option] = path
    return chosen


def _same_file_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path)


def _write(path: str, text: str, option: str) -> None:
    atomic_write_text(Path(path), text, option)


def _warn_unchecked(baseline: Any, current: Any, comparison: Comparison) -> None:
    """Without a gate nothing fails, but what a gate would refuse is still said."""
    for side, record in (("baseline", baseline), ("current", current)):
        why = unfinished(record)
        if why:
            click.echo(f"launchbench: warning: the {side} run {why}", err=True)
    if comparison.rows and all(row.only_in is not None for row in comparison.rows):
        click.echo("launchbench: warning: the runs have no rows in common", err=True)
    for note in scenario_differences(baseline, current):
        click.echo(f"launchbench: warning: {note}", err=True)


def _append_step_summary(markdown: str) -> None:
    target = os.environ.get(SUMMARY_ENV)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as err:
        click.echo(f"launchbench: warning: cannot append to ${SUMMARY_ENV} ({err})", err=True)


def _outcome_line(report: GateReport | None, what: str) -> str:
    if report is None:
        return "no gate rules given (--fail-on): exit 0"
    if report.passed:
        return f"PASS: no {what} ({len(report.checks)} checks)"
    return f"FAIL: {len(report.failures)} {what}(s) of {len(report.checks)} checks"


FORMATS = ("table", "markdown", "csv", "json")


@click.command()
@click.argument("baseline", type=click.Path())
@click.argument("current", type=click.Path())
@click.option("-m", "--metric", "metrics", multiple=True, type=click.Choice(list(METRIC_BY_NAME)),
              help=f"Metric to compare (repeatable). Default: {', '.join(DEFAULT_METRICS)}.")
@click.option("--threshold", "thresholds", multiple=True, metavar="[METRIC:]N%",
              callback=_parse_many(parse_threshold, CompareSettingsError),
              help="Smallest change that counts, per metric (latency_us:10%) or for all (10%). Default 5%.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_ALPHA, show_default=True,
              help="Significance level of the t test over passes (or, in ab, over rounds).")
@click.option("--fail-on", "rules", multiple=True, metavar="METRIC:N%|METRIC:Nus", callback=_parse_many(parse_rule, GateRuleError),
              help="Exit 1 when a row's verdict is slower, by at least this much (repeatable), "
              "e.g. wall_us_per_launch:5%.")
@click.option("--fail-on-missing", is_flag=True, hidden=True, help="Kept for old scripts: a gate fails on missing rows by default.")
@click.option("--allow-missing", is_flag=True, help="Do not fail the gate when a row that was ok in the baseline is missing or failed in the current run.")
@click.option("--allow-empty", is_flag=True, help="Do not fail the gate when it evaluated no check or the runs have no rows in common (a warning instead).")
@click.option("--allow-interrupted", is_flag=True, help="Do not fail the gate when the current run is interrupted, failed or never finished (a warning instead).")
@click.option("--fail-on-blind", is_flag=True,
              help="Also exit 1 when a gated row's minimum detectable effect exceeds its --fail-on amount (it could not have failed).")
@click.option("--allow-different-gpu", is_flag=True, help="Compare runs taken on different GPU models (refused otherwise).")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format.")
@click.option("-o", "--output", type=click.Path(), help=OUTPUT_HELP)
@click.option("--junit", type=click.Path(), help="Also write JUnit XML: one testcase per row and metric (" + REPLACED + ").")
@handle_errors
def compare(
    baseline: str,
    current: str,
    metrics: tuple[str, ...],
    thresholds: list[tuple[str | None, float]],
    alpha: float,
    rules: list[GateRule],
    fail_on_missing: bool,
    fail_on_blind: bool,
    allow_missing: bool,
    allow_empty: bool,
    allow_interrupted: bool,
    allow_different_gpu: bool,
    fmt: str,
    output: str | None,
    junit: str | None,
) -> None:
    """Compare two runs (run directories or results files): BASELINE → CURRENT.

    Rows are matched on (scenario, case, mode). For each metric: the ratio of medians, a 95% confidence
    interval and a t test over passes (each row's between-pass variance, shrunk toward rows of its
    kind), the minimum detectable effect (MDE), and a verdict: faster or slower (significant, beyond the
    threshold and the CI on that side of 0), same, uncertain, missing or failed. Only slower rows fail
    a --fail-on rule; improvements never do; a gated row whose MDE exceeds the rule is reported
    (failed with --fail-on-blind). $GITHUB_STEP_SUMMARY, when set, gets a markdown summary.

    A gate (--fail-on) that checks nothing fails: no row compared on a gated metric, no rows in common,
    a gated row missing in the current run, or a current run that is interrupted or failed, each with
    its reason (--allow-empty, --allow-missing, --allow-interrupted relax them).

    Exit 0 when no --fail-on rule finds a regression, 1 when one does or the gate checked nothing, 2 on
    a usage or input error (including runs taken on different GPU models without --allow-different-gpu).
    """
    check_outputs([("-o", output), ("--junit", junit)], inputs=[baseline, current])
    try:
        settings = _settings(metrics, thresholds, alpha, rules)
    except CompareSettingsError as err:
        raise click.UsageError(str(err)) from None
    baseline_run, current_run = load_run(baseline), load_run(current)
    comparison = compare_runs(
        baseline_run,
        current_run,
        settings,
        allow_different_gpu=allow_different_gpu,
        baseline_label=baseline,
        current_label=current,
    )
    report = None
    if rules or fail_on_missing:
        policy = CoveragePolicy(allow_empty=allow_empty, allow_missing=allow_missing, allow_interrupted=allow_interrupted)
        report = evaluate_rules(comparison, rules, not allow_missing, fail_on_blind)
        report = comparison_coverage(report, comparison, baseline_run, current_run, policy)
    else:
        _warn_unchecked(baseline_run, current_run, comparison)
    emit_comparison(comparison, report, fmt, output, junit)
    sys.exit(EXIT_FAIL if report is not None and not report.passed else EXIT_OK)


def emit_comparison(comparison: Comparison, report: GateReport | None, fmt: str, output: str | None, junit: str | None) -> None:
    """What compare and ab print and write: the chosen format (to FILE or the terminal), JUnit, and the
    step summary."""
    renderers: dict[str, Callable[[], str]] = {
        "markdown": lambda: comparison_markdown(comparison, report),
        "csv": lambda: comparison_csv(comparison, report),
        "json": lambda: comparison_json(comparison, report),
        "table": lambda: _render_text(lambda c: render_comparison(c, comparison, report)),
    }
    if output:
        _write(output, renderers[fmt](), "-o")
        click.echo(f"wrote {output}; {_outcome_line(report, 'regression')}")
    elif fmt == "table":
        render_comparison(_console(), comparison, report)
    else:
        click.echo(renderers[fmt](), nl=False)
        click.echo(_outcome_line(report, "regression"), err=True)
    if junit:
        _write(junit, comparison_junit(comparison, report), "--junit")
    _append_step_summary(comparison_markdown(comparison, report, max_rows=STEP_SUMMARY_ROWS))


@click.command()
@click.argument("run", type=click.Path())
@click.option("-s", "--scenario", "scenarios", multiple=True, type=click.Path(dir_okay=False),
              help="Scenario file whose 'expect:' entries to check (repeatable). Default: the files recorded in the run.")
@click.option("--format", "fmt", type=click.Choice(("table", "markdown", "json")), default="table", show_default=True,
              help="Output format.")
@click.option("-o", "--output", type=click.Path(), help=OUTPUT_HELP)
@click.option("--junit", type=click.Path(), help="Also write JUnit XML: one testcase per expectation and row (" + REPLACED + ").")
@click.option("--allow-empty", is_flag=True, help="Do not fail when no expectation was evaluated on a row with a value.")
@click.option("--allow-interrupted", is_flag=True, help="Do not fail when the run is interrupted, failed or never finished.")
@handle_errors
def check(
    run: str, scenarios: tuple[str, ...], fmt: str, output: str | None, junit: str | None, allow_empty: bool, allow_interrupted: bool
) -> None:
    """Check a run against the expectations of its scenario files (no baseline needed).

    Each 'expect:' entry names a case pattern, a mode, a results.csv column and a max and/or min; the
    median of the matching rows must lie within.

    A scenario file with a mistake (a metric that is not a results.csv column, a case pattern that
    matches no case of the file) is an input error. A file that changed since the run is noted. The
    check fails when no expectation was evaluated or the run did not finish (--allow-empty,
    --allow-interrupted relax them).

    Exit 0 when every expectation holds, 1 when one fails or matches no row or the check covered
    nothing, 2 on a usage or input error.
    """
    check_outputs([("-o", output), ("--junit", junit)], inputs=[run, *scenarios])
    record = load_run(run)
    report = check_against_scenarios(record, scenarios)
    report = check_coverage(report, record, CoveragePolicy(allow_empty=allow_empty, allow_interrupted=allow_interrupted))
    renderers: dict[str, Callable[[], str]] = {
        "markdown": lambda: check_markdown(report),
        "json": lambda: report_json(report),
        "table": lambda: _render_text(lambda c: render_checks(c, report)),
    }
    if output:
        _write(output, renderers[fmt](), "-o")
        click.echo(f"wrote {output}; {_outcome_line(report, 'failed expectation')}")
    elif fmt == "table":
        render_checks(_console(), report)
    else:
        click.echo(renderers[fmt](), nl=False)
        click.echo(_outcome_line(report, "failed expectation"), err=True)
    if junit:
        _write(junit, report_junit(report), "--junit")
    _append_step_summary(check_markdown(report))
    sys.exit(EXIT_OK if report.passed else EXIT_FAIL)


COMMANDS: list[click.Command] = [compare, check]
