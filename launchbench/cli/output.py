"""What compare and check write: a report in the format chosen (--format, -o/--output), JUnit XML
(--junit) and the GitHub step summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchbench.cli.common import REPLACED, F, output_option, quiet_option, stack
from launchbench.report.export import REPORT_FORMATS

if TYPE_CHECKING:
    from launchbench.report.export import Subject

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

STEP_SUMMARY_ROWS = 500  # per table: GitHub keeps at most 1 MiB of step summary


def report_options(junit_help: str) -> Callable[[F], F]:
    """``--format``, ``-o/--output``, ``--junit`` and ``-q``: how compare and check write their report
    (publish); ``junit_help`` says what one JUnit testcase is."""
    return stack(
        click.option(
            "--format",
            "fmt",
            type=click.Choice(REPORT_FORMATS),
            default="table",
            show_default=True,
            help="Output format.",
        ),
        output_option(),
        click.option(
            "--junit",
            type=click.Path(path_type=Path),
            help=f"Also write JUnit XML: {junit_help} ({REPLACED}).",
        ),
        quiet_option("Print the one-line outcome instead of the table."),
    )


def publish(subject: Subject, fmt: str, output: Path | None, junit: Path | None, quiet: bool) -> None:
    """Print or write a report in the chosen format (report.export's registry), then the JUnit XML where
    asked and the step summary (markdown, each table cut at STEP_SUMMARY_ROWS). The one-line outcome
    goes to stdout after the table or the file, to stderr after data on stdout; with ``quiet`` the table
    is left out."""
    from launchbench.report.export import draw, export, outcome
    from launchbench.report.terminal import make_console

    said = outcome(subject)
    if output is not None:
        write_output(output, export(fmt, subject), "-o")
        click.echo(said if quiet else f"wrote {output}; {said}")
    elif fmt != "table":
        click.echo(export(fmt, subject), nl=False)
        click.echo(said, err=True)
    elif quiet:
        click.echo(said)
    else:
        draw(make_console(), subject)
    if junit:
        write_output(Path(junit), export("junit", subject), "--junit")
    if os.environ.get(SUMMARY_ENV):  # the markdown is made only where it goes somewhere
        append_step_summary(export("markdown", subject, max_rows=STEP_SUMMARY_ROWS))


def write_output(path: Path, text: str, option: str) -> None:
    """Write ``text`` to ``path`` atomically; a write error names ``option`` (one line, exit 2)."""
    from launchbench.files import atomic_write_text

    atomic_write_text(Path(path), text, option)


def append_step_summary(markdown: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY when it is set (GitHub Actions shows it on the run's page)."""
    target = os.environ.get(SUMMARY_ENV)
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as err:
        click.echo(f"launchbench: warning: cannot append to ${SUMMARY_ENV} ({err})", err=True)
