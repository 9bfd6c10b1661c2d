"""compare: two runs, row by row, with a verdict per metric and an optional regression gate."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from launchbench.analysis.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_GATE_SCOPE,
    DEFAULT_METRICS,
    DEFAULT_THRESHOLD,
    GATE_SCOPES,
)
from launchbench.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    allow_options,
    check_outputs,
    handle_errors,
    jobs_option,
    metric_option,
    parsed_option,
    short_help,
    stack,
)
from launchbench.cli.history import baseline_query, history_baseline_options
from launchbench.cli.output import REPORT_FORMATS, publish, report_options

if TYPE_CHECKING:  # the statistics (numpy, SciPy) load when a comparison runs, not for --help
    from launchbench.analysis.compare import CompareSettings, Comparison, Evidence
    from launchbench.analysis.gate import GateReport, GateRule, GateScope

FORMATS = REPORT_FORMATS  # ab writes the same formats
F = Callable[..., Any]


def _threshold(text: str) -> tuple[str | None, float]:
    from launchbench.analysis.comparison import parse_threshold  # the model: no statistics loaded

    return parse_threshold(text)


def _rule(text: str) -> GateRule:
    from launchbench.analysis.gate import parse_rule

    return parse_rule(text)


def comparison_options(unit: str) -> Callable[[F], F]:
    """The options that choose what is compared and what fails the gate, shared by compare and ab
    (``unit``: what the t test runs over, "passes" or "rounds")."""
    options = [
        metric_option(f"Metric to compare (repeatable). Default: {', '.join(DEFAULT_METRICS)}."),
        parsed_option(
            "--threshold",
            "thresholds",
            "[METRIC:]N%",
            _threshold,
            "Smallest change that counts, per metric (latency_us:10%) or for all (10%). "
            f"Default {DEFAULT_THRESHOLD:.0%}.",
        ),
        click.option(
            "--alpha",
            type=click.FloatRange(0, 1, min_open=True, max_open=True),
            default=DEFAULT_ALPHA,
            show_default=True,
            help=f"Significance level of the t test over {unit} (p adjusted over the rows of each metric).",
        ),
        parsed_option(
            "--fail-on",
            "rules",
            "METRIC:N%|METRIC:Nus",
            _rule,
            "Exit 1 when a row's verdict is slower, by at least this much (repeatable), "
            "e.g. wall_us_per_launch:5%.",
        ),
        click.option(
            "--allow-blind",
            is_flag=True,
            help="Do not fail the gate on a gated row whose minimum detectable effect exceeds its --fail-on "
            "amount (it could not have shown that change; a warning instead).",
        ),
        click.option(
            "--fail-on-blind",
            is_flag=True,
            hidden=True,
            expose_value=False,
            help="Kept for old scripts: a gate fails on blind rows by default.",
        ),
        click.option(
            "--gate-rows",
            type=click.Choice(GATE_SCOPES),
            default=DEFAULT_GATE_SCOPE,
            show_default=True,
            help="Rows the gate judges: all, gpu-bound (the GPU's own time sets them: graph replays) or "
            "host-bound (the launch cost: eager chains, one-launch graphs; results.csv host_bound).",
        ),
    ]
    return stack(*options)


@click.command("compare", short_help=short_help("compare"))
@click.argument("runs", nargs=-1, required=True, type=click.Path(), metavar="[BASELINE] CURRENT...")
@comparison_options("passes")
@click.option(
    "--fail-on-missing",
    is_flag=True,
    hidden=True,
    help="Kept for old scripts: a gate fails on missing rows by default.",
)
@allow_options(
    missing="Do not fail the gate when a row that was ok in the baseline is missing or failed in the current run.",
    empty="Do not fail the gate when it evaluated no check or the runs have no rows in common (a warning instead).",
    interrupted="Do not fail the gate when the current run is interrupted, failed or never finished (a warning instead).",
    disturbed="Do not fail the gate on a gated row measured in a disturbed state in either run (a note instead).",
    different_gpu="Compare runs taken on different GPU models (refused otherwise).",
)
@report_options("one testcase per row and metric")
@history_baseline_options
@jobs_option("Two runs of 1,000 rows or more: the rows compared in")
@handle_errors
def compare(**given: Any) -> None:
    """Compare runs (run directories or results files): BASELINE → CURRENT, or BASELINE → each CURRENT.

    With more than one CURRENT, the table lays them side by side, a change and a verdict per run
    against BASELINE; each pair is compared and gated on its own, and the exit code is the worst.

    With --baseline history, CURRENT is compared against the last N matching runs of the history
    database instead (docs/history.md). Side A and side B of one `launchbench ab` directory (OUT/a
    OUT/b) are compared as ab compares them: paired, round by round.

    Rows are matched on (scenario, case, mode). For each metric: the ratio of medians, a 95% confidence
    interval and a t test over passes (each row's between-pass variance, shrunk toward rows of its
    kind), the minimum detectable effect (MDE), and a verdict: faster or slower (significant, beyond the
    threshold and the CI on that side of 0), same, uncertain, missing or failed. Only slower rows fail
    a --fail-on rule; improvements never do. $GITHUB_STEP_SUMMARY, when set, gets a markdown summary.

    A gate (--fail-on) that cannot see fails: a gated row whose MDE exceeds the rule (blind: separate
    runs judge host-bound rows to tens of percent; gate them with `launchbench ab`, or gate only
    --gate-rows gpu-bound here), no row compared on a gated metric, no rows in common, a gated row
    missing in the current run, or a current run that is interrupted or failed, each with its reason
    (--allow-blind, --allow-empty, --allow-missing, --allow-interrupted, --allow-disturbed relax them).

    Exit 0 when no --fail-on rule finds a regression, 1 when one does or the gate checked nothing, 2 on
    a usage or input error (including runs taken on different GPU models without --allow-different-gpu).
    """
    from launchbench.results.document import kept_to_the_end

    # the imports, the runs and the comparison hold no garbage worth a collection; what is alive at the
    # end (the modules) leaves the collector's view, so the interpreter's exit walks none of it either
    with kept_to_the_end():
        code = _compare(CompareArgs(**given))
    sys.exit(code)


@dataclass(frozen=True)
class CompareArgs:
    """What the compare command was given, as click parsed it."""

    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    thresholds: list[tuple[str | None, float]]
    alpha: float
    rules: list[GateRule]
    fail_on_missing: bool
    allow_missing: bool
    allow_empty: bool
    allow_interrupted: bool
    allow_disturbed: bool
    allow_blind: bool
    gate_rows: GateScope
    allow_different_gpu: bool
    fmt: str
    output: Path | None
    junit: Path | None
    quiet: bool
    baseline_from: str | None
    db: str | None
    same_driver: bool
    same_cupy: bool
    git_branch: str | None
    last: int
    jobs: int


def _compare(args: CompareArgs) -> int:
    """The runs loaded (or the baseline drawn from the history), each CURRENT compared with BASELINE and
    gated, the report written; the exit code. Every argument is checked before the statistics load."""
    if args.baseline_from == "history" and len(args.runs) != 1:
        raise click.UsageError("with --baseline history give only CURRENT")
    if args.baseline_from is None and len(args.runs) < 2:
        raise click.UsageError("give BASELINE and CURRENT (or --baseline history and CURRENT)")
    check_outputs([("-o", args.output), ("--junit", args.junit)], inputs=list(args.runs))
    settings = usable_settings(args.metrics, args.thresholds, args.alpha, args.rules)
    if args.baseline_from == "history":
        from launchbench.history.baseline import history_baseline_for

        drawn = history_baseline_for(
            args.runs[0],
            baseline_query(args.db, args.same_driver, args.same_cupy, args.git_branch, args.last),
        )
        sides = [(drawn.label, drawn.baseline), (args.runs[0], drawn.current)]
    else:
        from launchbench.results.store import load_run

        sides = [(path, load_run(path)) for path in args.runs]  # the collector paused: compare()
    from launchbench.analysis.coverage import CoveragePolicy
    from launchbench.analysis.gate import GatePolicy
    from launchbench.api import compare_pair

    coverage = CoveragePolicy(
        args.allow_empty, args.allow_missing, args.allow_interrupted, args.allow_disturbed
    )
    policy = (
        GatePolicy(tuple(args.rules), args.gate_rows, args.allow_blind, coverage)
        if args.rules or args.fail_on_missing
        else None
    )
    pairs = []
    for side in sides[1:]:  # each pair: launchbench.api.compare_pair, the API's comparison
        design = _design(sides[0], side, args.baseline_from)
        pairs.append(
            compare_pair(sides[0], side, settings, policy, args.allow_different_gpu, design, args.jobs)
        )
        if policy is None:
            _warn(pairs[-1][0])
    if len(pairs) == 1:
        emit_comparison(*pairs[0], args.fmt, args.output, args.junit, args.quiet)
    else:
        emit_series(pairs, args.fmt, args.output, args.junit, args.quiet)
    return EXIT_FAIL if any(report is not None and not report.passed for _, report in pairs) else EXIT_OK


def usable_settings(
    metrics: tuple[str, ...], thresholds: list[tuple[str | None, float]], alpha: float, rules: list[GateRule]
) -> CompareSettings:
    """The comparison's settings (analysis.gate.gated_settings); one that cannot be used: a usage error,
    said with the comparison model's errors (analysis.comparison, which loads no SciPy) before the
    statistics load."""
    from launchbench.analysis.comparison import CompareSettingsError
    from launchbench.analysis.gate import gated_settings

    try:
        return gated_settings(metrics, thresholds, alpha, rules)
    except CompareSettingsError as err:
        raise click.UsageError(str(err)) from None


def _design(baseline: tuple[str, Any], current: tuple[str, Any], baseline_from: str | None) -> Evidence:
    """Paired rounds for side A and side B of one ab directory given as paths (launchbench.api.pair_design);
    separate runs against a baseline drawn from the history."""
    from launchbench.analysis.compare import SEPARATE_RUNS
    from launchbench.api import pair_design

    return pair_design(baseline, current) if baseline_from is None else SEPARATE_RUNS


def _warn(comparison: Comparison) -> None:
    """An ungated comparison's warnings, said on stderr (a gate's report says them otherwise)."""
    for warning in comparison.all_warnings:
        click.echo(f"launchbench: warning: {warning}", err=True)


def emit_comparison(
    comparison: Comparison,
    report: GateReport | None,
    fmt: str,
    output: Path | None,
    junit: Path | None,
    quiet: bool = False,
) -> None:
    """What compare and ab print and write: the chosen format (to FILE or the terminal), JUnit, and the
    step summary."""
    from launchbench.report.export import Compared

    publish(Compared(comparison, report), fmt, output, junit, quiet)


command = compare


def emit_series(
    pairs: list[tuple[Comparison, GateReport | None]],
    fmt: str,
    output: Path | None,
    junit: Path | None,
    quiet: bool,
) -> None:
    """What compare prints and writes for one BASELINE and several CURRENT runs."""
    from launchbench.report.export import Series

    publish(Series(pairs), fmt, output, junit, quiet)
