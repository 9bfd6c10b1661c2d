"""check: a run against the expectations of its scenario files (no baseline needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from launchbench.cli.common import EXIT_FAIL, EXIT_OK, allow_options, check_outputs, handle_errors, short_help
from launchbench.cli.output import publish, report_options


@click.command("check", short_help=short_help("check"))
@click.argument("run", type=click.Path())
@click.option(
    "-s",
    "--scenario",
    "scenarios",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="Scenario file whose 'expect:' entries to check (repeatable). Default: the files recorded in the run.",
)
@allow_options(
    empty="Do not fail when no expectation was evaluated on a row with a value.",
    interrupted="Do not fail when the run is interrupted, failed or never finished.",
    disturbed="Do not fail on a checked row measured in a disturbed state (a note instead).",
)
@report_options("one testcase per expectation and row")
@handle_errors
def check(
    run: str,
    scenarios: tuple[str, ...],
    allow_empty: bool,
    allow_interrupted: bool,
    allow_disturbed: bool,
    fmt: str,
    output: Path | None,
    junit: Path | None,
    quiet: bool,
) -> None:
    """Check a run against the expectations of its scenario files (no baseline needed).

    Each 'expect:' entry names a case pattern, a mode, a results.csv column and a max and/or min; the
    median of the matching rows must lie within.

    A scenario file with a mistake (a metric that is not a results.csv column, a case pattern that
    matches no case of the file) is an input error. A file that changed since the run is noted. The
    check fails when no expectation was evaluated, the run did not finish, or a checked row was
    measured in a disturbed state (--allow-empty, --allow-interrupted, --allow-disturbed relax them).

    Exit 0 when every expectation holds, 1 when one fails or matches no row or the check covered
    nothing, 2 on a usage or input error.
    """
    from launchbench.results.store import load_run

    check_outputs([("-o", output), ("--junit", junit)], inputs=[run, *scenarios])
    record = load_run(run)  # a bad run is refused before the statistics and tables are imported

    from launchbench.analysis.coverage import CoveragePolicy
    from launchbench.analysis.gate import CheckedRun, GatePolicy, gate
    from launchbench.report.export import Checked

    coverage = CoveragePolicy(
        allow_empty=allow_empty, allow_interrupted=allow_interrupted, allow_disturbed=allow_disturbed
    )
    report = gate(CheckedRun(record, scenarios), GatePolicy(coverage=coverage))
    publish(Checked(report), fmt, output, junit, quiet)
    sys.exit(EXIT_OK if report.passed else EXIT_FAIL)


command = check
