"""history commands: ingest runs into the history database and query it (list, trend, changes, report).

The database is ``--db URL`` (a path is a SQLite file), else $LAUNCHBENCH_HISTORY_DB, else
results/history.sqlite. Exit codes: 0 success; 2 usage or input error (not a run, a half-written run, a
database that is locked, of a newer schema or whose server does not answer).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from launchbench.analysis.defaults import DEFAULT_ALPHA, DEFAULT_METRICS, DEFAULT_THRESHOLD
from launchbench.cli.common import (
    EXIT_OK,
    EXIT_USAGE,
    handle_errors,
    metric_option,
    out_dir_option,
    parsed_option,
    quiet_option,
    short_help,
)
from launchbench.history import (
    DEFAULT_LAST,
    DEFAULT_METRIC,
    ENV_VAR,
)  # not history.db: compare and ab load this module
from launchbench.results.metrics import ALL_MODES, METRIC_BY_NAME

if TYPE_CHECKING:
    from launchbench.history.baseline import BaselineQuery

F = Callable[..., Any]


def ingest_options(what: str) -> Callable[[F], F]:
    """run's and ab's --history/--no-history and --db; ``what`` says what is ingested and when."""

    def decorate(func: F) -> F:
        func = click.option(
            "--db",
            "db",
            metavar="URL",
            help=f"History database for --history (default ${ENV_VAR}, else results/history.sqlite).",
        )(func)
        return click.option(
            "--history/--no-history",
            "history",
            default=None,
            help=f"Ingest {what} into the history database (default: when ${ENV_VAR} is set).",
        )(func)

    return decorate


def wants_history(history: bool | None, db: str | None) -> bool:
    """--history, else --no-history, else whether --db or $LAUNCHBENCH_HISTORY_DB names a database."""
    return history if history is not None else bool(db or os.environ.get(ENV_VAR))


def ingest_after_run(db: str | None, *run_dirs: Path, err: bool = False) -> int:
    """``run --history``, ``ab --history``: ingest the finished run directories (every one is read before
    the database is opened; each goes in within its own transaction). An error is one line and exit 2
    (the run directories stay on disk). ``err``: the outcome lines go to stderr."""
    from launchbench.errors import LaunchbenchError
    from launchbench.history.ingest import ingest_loaded, read_run_dir

    try:
        loaded = [read_run_dir(d) for d in run_dirs]
        with _open(db) as opened:
            outcomes = [ingest_loaded(opened, run) for run in loaded]
    except LaunchbenchError as error:
        click.echo(f"launchbench: error: history: {error}", err=True)
        return EXIT_USAGE
    for run_dir, outcome in zip(run_dirs, outcomes):
        what = "added" if outcome.created else "already there"
        click.echo(f"history: {run_dir}: run {outcome.run_id} {what}", err=err)
    return EXIT_OK


def db_option(func: F) -> F:
    return click.option(
        "--db",
        "db",
        metavar="URL",
        help=f"History database: a SQLite file or a SQLAlchemy URL "
        f"(postgresql+psycopg://USER@HOST/DB). Default ${ENV_VAR}, else results/history.sqlite.",
    )(func)


def filter_options(func: F) -> F:
    """Options that pick runs by their environment (shared by list, trend, changes, report, compare)."""
    for option in reversed(
        [
            click.option(
                "--gpu", "gpu_name", metavar="NAME", help="Only runs on this GPU model (e.g. 'NVIDIA H200')."
            ),
            click.option("--gpu-uuid", metavar="UUID", help="Only runs on this GPU (its UUID)."),
            click.option("--driver", metavar="VERSION", help="Only runs with this driver version."),
            click.option("--cupy", metavar="VERSION", help="Only runs with this CuPy version."),
            click.option("--cuda-runtime", metavar="VERSION", help="Only runs with this CUDA runtime."),
            click.option(
                "--launchbench",
                "launchbench_version",
                metavar="VERSION",
                help="Only runs measured by this launchbench version.",
            ),
            click.option("--branch", "git_branch", metavar="NAME", help="Only runs of this git branch."),
            click.option("--commit", "git_commit", metavar="SHA", help="Only runs of this git commit."),
            click.option("--host", metavar="NAME", help="Only runs on this host."),
            click.option("--ab", "ab_id", metavar="ID", help="Only the two sides of this `ab` invocation."),
            click.option(
                "--ab-side",
                type=click.Choice(("A", "B"), case_sensitive=False),
                callback=lambda _ctx, _param, value: value.upper() if value else None,
                help="Only runs that were this side of an `ab` invocation.",
            ),
            click.option("--scenario", metavar="NAME", help="Only runs that measured this scenario."),
            click.option(
                "--last", type=click.IntRange(min=1), metavar="N", help="Only the newest N matching runs."
            ),
        ]
    ):
        func = option(func)
    return func


def make_filter(**kwargs: Any) -> Any:
    from launchbench.history.matching import RunFilter

    return RunFilter(**kwargs)


def _width(output: str | None, fmt: str) -> int | None:
    """The terminal's width for a table printed on one; None (no limit) for a file, a pipe or data."""
    if fmt != "table" or output is not None:
        return None
    from rich.console import Console

    console = Console()
    return console.width if console.is_terminal else None


def _emit(text: str, output: str | None) -> None:
    if output:
        from launchbench.files import atomic_write_text

        atomic_write_text(Path(output), text, "-o")
        click.echo(f"wrote {output}")
    else:
        click.echo(text, nl=False)


def _quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    parent = ctx.parent if ctx is not None else None
    return bool(parent is not None and parent.params.get("quiet"))


def _open(db: str | None) -> Any:
    from launchbench.history.db import HistoryDB

    return HistoryDB(db)


def _read(db: str | None, reading: str) -> Any:
    """The database for a command that only reads it: a missing SQLite file is refused, not made."""
    from launchbench.history.db import open_existing

    return open_existing(db, reading)


def _reader(db: str | None, reading: str) -> Any:
    """_read's database for a command that reads it through plain SQL (list, trend): a current SQLite
    file through the standard library's driver, without SQLAlchemy (history.reading)."""
    from launchbench.history.reading import open_reader

    return open_reader(db, reading)


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "markdown", "csv", "json")),
    default="table",
    show_default=True,
    help="Output format.",
)
output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    help="Write the output to FILE instead of the terminal.",
)


@click.group("history", short_help=short_help("history"))
@quiet_option("Print only errors (ingest and report say nothing when they succeed).")
@click.pass_context
def history(ctx: click.Context, quiet: bool) -> None:
    """Keep runs in a database and follow them: trends, change points, an HTML report.

    Ingest run directories, list them, follow a row over runs, find change points, write an HTML report.

    Exit 0 on success, 2 on a usage or input error (not a run, a half-written run, a database that is
    locked, of a newer schema, or whose server does not answer). `run --history` and `compare --baseline history` use the same database."""


@history.command(short_help="Add run directories to the history; a run already there is skipped.")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path())
@db_option
@click.option(
    "--commit",
    "git_commit",
    metavar="SHA",
    help="Record this git commit (default: the one the run recorded).",
)
@click.option(
    "--branch", "git_branch", metavar="NAME", help="Record this git branch (runs do not record one)."
)
@quiet_option("Print only errors.")
@handle_errors
def ingest(
    run_dirs: tuple[str, ...], db: str | None, git_commit: str | None, git_branch: str | None, quiet: bool
) -> None:
    """Add run directories to the history (idempotent: a run already there, by content, is skipped).

    Each run is read and checked before the database is touched and goes in within one transaction."""
    from launchbench.history.ingest import ingest_loaded, read_run_dir

    loaded = [read_run_dir(d) for d in run_dirs]
    with _open(db) as opened:
        for run in loaded:
            outcome = ingest_loaded(opened, run, git_commit, git_branch)
            what = "added" if outcome.created else "already in the history"
            if not (quiet or _quiet()):
                click.echo(f"{run.path}: {what} (run {outcome.run_id}) in {opened.label}")
    sys.exit(EXIT_OK)


@history.command(name="list")
@db_option
@filter_options
@format_option
@output_option
@handle_errors
def list_command(db: str | None, fmt: str, output: str | None, **filters: Any) -> None:
    """The runs in the history, oldest first, with their environment."""
    from launchbench.history.matching import list_runs
    from launchbench.report.history import LIST_COLUMNS, render, run_records

    with _reader(db, "the runs") as opened:
        runs = list_runs(opened, make_filter(**filters))
        _emit(
            render(
                run_records(runs),
                fmt,
                f"{len(runs)} runs in {opened.label}",
                LIST_COLUMNS,
                width=_width(output, fmt),
            ),
            output,
        )
    sys.exit(EXIT_OK)


@history.command(short_help="One row's metric over runs: median and 95% CI per run.")
@click.argument("row")
@click.option(
    "--mode",
    type=click.Choice(ALL_MODES),
    default="graph",
    show_default=True,
    help="Which mode of the row.",
)
@click.option(
    "-m", "--metric", type=click.Choice(list(METRIC_BY_NAME)), default=DEFAULT_METRIC, show_default=True
)
@db_option
@filter_options
@format_option
@output_option
@handle_errors
def trend(
    row: str, mode: str, metric: str, db: str | None, fmt: str, output: str | None, **filters: Any
) -> None:
    """One row's metric over runs (ROW is SCENARIO/CASE, e.g. quickstart/empty/length=10): the median
    and its 95% CI in each run, oldest first. A row no run in the history measured is an error (exit 2)."""
    from launchbench.history.trend import parse_row, require_row
    from launchbench.history.trend import trend as query_trend
    from launchbench.report.history import TREND_COLUMNS, render, trend_records

    key = parse_row(row, mode)
    with _reader(db, "a trend") as opened:
        points = query_trend(opened, key, metric, make_filter(**filters))
        if not points:  # a row no run measured is a mistake; a filter that matches no run is an answer
            require_row(opened, key)
    _emit(
        render(
            trend_records(points, metric),
            fmt,
            f"{row} [{mode}] {metric}: {len(points)} runs",
            TREND_COLUMNS,
            "trend",
            _width(output, fmt),
        ),
        output,
    )
    sys.exit(EXIT_OK)


def _history_threshold(text: str) -> tuple[str | None, float]:
    """``[METRIC:]N%`` as compare takes it; a bare number is read as percent (the old spelling)."""
    from launchbench.analysis.compare import parse_threshold

    bare = text.strip()
    try:
        float(bare)
    except ValueError:
        return parse_threshold(text)
    return parse_threshold(f"{bare}%")


@history.command(short_help="Change points of each row and metric over runs.")
@metric_option(f"Metric (repeatable). Default: {', '.join(DEFAULT_METRICS)}.")
@parsed_option(
    "--threshold",
    "thresholds",
    "[METRIC:]N%",
    _history_threshold,
    f"Smallest step that counts, per metric (latency_us:10%) or for all (10%). Default {100 * DEFAULT_THRESHOLD:g}%.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=DEFAULT_ALPHA,
    show_default=True,
    help="Significance level of Welch's t test across the runs on each side of a step.",
)
@db_option
@filter_options
@format_option
@output_option
@handle_errors
def changes(
    metrics: tuple[str, ...],
    thresholds: list[tuple[str | None, float]],
    alpha: float,
    db: str | None,
    fmt: str,
    output: str | None,
    **filters: Any,
) -> None:
    """Change points of every row and metric over runs: the run before and after each step, the step
    with its 95% CI, and the environment fields that changed there (runs are the units; see docs/history.md)."""
    from launchbench.history.changes import detect_changes
    from launchbench.report.history import CHANGE_COLUMNS, change_records, render

    default = next((v for m, v in reversed(thresholds) if m is None), DEFAULT_THRESHOLD)
    per_metric = {m: v for m, v in thresholds if m is not None}
    found = []
    with _read(db, "change points") as opened:
        for metric in metrics or DEFAULT_METRICS:
            threshold = per_metric.get(metric, default)
            found += detect_changes(
                opened, make_filter(**filters), (metric,), threshold=threshold, alpha=alpha
            )
    _emit(
        render(
            change_records(found),
            fmt,
            f"{len(found)} change points",
            CHANGE_COLUMNS,
            "changes",
            _width(output, fmt),
        ),
        output,
    )
    sys.exit(EXIT_OK)


@history.command(short_help="One HTML page to explore the history in a browser.")
@out_dir_option("Directory for index.html (created).", required=True)
@click.option(
    "-m",
    "--metric",
    type=click.Choice(list(METRIC_BY_NAME)),
    default=DEFAULT_METRIC,
    show_default=True,
    help="Metric to plot.",
)
@db_option
@filter_options
@quiet_option("Print only errors.")
@handle_errors
def report(out_dir: Path, metric: str, db: str | None, quiet: bool, **filters: Any) -> None:
    """One HTML page to explore in a browser (no server, no network): per scenario, a chart of each row
    over the runs' start times with its CI band and change points, and a table of the rows measured in
    one run; the change points listed with what changed; filters on the environment, scenario and dates
    that redraw every chart; links to the run directories."""
    from launchbench.report.history_html import write_report

    with _read(db, "the report's runs") as opened:
        path = write_report(opened, out_dir, metric, make_filter(**filters))
    if not (quiet or _quiet()):
        click.echo(f"wrote {path}")
    sys.exit(EXIT_OK)


COMMANDS: list[click.Command] = [history]
command = history


def history_baseline_options(func: F) -> F:
    """compare's options for ``--baseline history``: the database, the run filters, and filters that
    take their value from the current run."""
    for option in reversed(
        [
            click.option(
                "--baseline",
                "baseline_from",
                type=click.Choice(["history"]),
                help="Compare CURRENT against the last N matching runs of the history database instead of a BASELINE run "
                "(same GPU model as CURRENT; see --last, --branch, --same-driver, --same-cupy).",
            ),
            click.option(
                "--db",
                "db",
                metavar="URL",
                help=f"With --baseline history: the database (default ${ENV_VAR}, "
                "else results/history.sqlite).",
            ),
            click.option(
                "--same-driver",
                is_flag=True,
                help="With --baseline history: only runs with CURRENT's driver.",
            ),
            click.option(
                "--same-cupy", is_flag=True, help="With --baseline history: only runs with CURRENT's CuPy."
            ),
            click.option(
                "--branch",
                "git_branch",
                metavar="NAME",
                help="With --baseline history: only runs of this branch.",
            ),
            click.option(
                "--last",
                type=click.IntRange(min=1),
                default=DEFAULT_LAST,
                show_default=True,
                metavar="N",
                help="With --baseline history: the newest N matching runs.",
            ),
        ]
    ):
        func = option(func)
    return func


def baseline_query(
    db: str | None, same_driver: bool, same_cupy: bool, git_branch: str | None, last: int
) -> BaselineQuery:
    """compare's --baseline history options as the library's query."""
    from launchbench.history.baseline import BaselineQuery, SameAs

    def same(flag: bool) -> SameAs:
        return SameAs.CURRENT if flag else SameAs.ANY

    return BaselineQuery(db, same(same_driver), same(same_cupy), git_branch, last)
