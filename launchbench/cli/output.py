"""What compare and check write: a report in the format chosen (--format, -o/--output), JUnit XML
(--junit) and the GitHub step summary ($GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from launchbench.cli.common import REPLACED, F, output_option, quiet_option, stack

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

REPORT_FORMATS = ("table", "markdown", "csv", "json")


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


@dataclass(frozen=True)
class Report:
    """A command's report in every form it is written: ``formats`` give the text of each data format
    (markdown, csv, json), ``draw`` prints the table on a rich console, ``outcome`` is the one-line
    verdict, ``junit`` the JUnit XML and ``summary`` the markdown for the step summary."""

    formats: dict[str, Callable[[], str]]
    draw: Callable[[Any], None]
    outcome: str
    junit: Callable[[], str]
    summary: Callable[[], str]


def publish(report: Report, fmt: str, output: Path | None, junit: Path | None, quiet: bool) -> None:
    """Print or write a report in the chosen format, then the JUnit XML where asked and the step summary.
    The one-line outcome goes to stdout after the table or the file, to stderr after data on stdout; with
    ``quiet`` the table is left out."""
    from launchbench.report.compare_console import render_text
    from launchbench.report.console import make_console

    if output is not None:
        write_output(output, render_text(report.draw) if fmt == "table" else report.formats[fmt](), "-o")
        click.echo(report.outcome if quiet else f"wrote {output}; {report.outcome}")
    elif fmt != "table":
        click.echo(report.formats[fmt](), nl=False)
        click.echo(report.outcome, err=True)
    elif quiet:
        click.echo(report.outcome)
    else:
        report.draw(make_console())
    if junit:
        write_output(Path(junit), report.junit(), "--junit")
    append_step_summary(report.summary())


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
