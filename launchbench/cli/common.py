"""What every command shares: exit codes, the error handler and the options spelled alike everywhere.

Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input error
(bad scenario, bad results file, no usable GPU); 130 interrupted.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Sequence
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from launchbench.errors import LaunchbenchError

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Show the tool's own errors as one message and exit 2; a traceback only with --debug."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except LaunchbenchError as err:
            if _debug():
                traceback.print_exc()
            click.echo(f"launchbench: error: {err}", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def _debug() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug"))


def short_help(name: str) -> str:
    """The one-line help of a command, as listed by ``launchbench --help``."""
    from launchbench.cli import COMMANDS

    return COMMANDS[name].short_help


# ------------------------------------------------------------------------------------------- options


class AliasedOption(click.Option):
    """An option whose old spellings still work for one release and are left out of --help."""

    def __init__(self, *args: Any, hidden_aliases: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = tuple(hidden_aliases)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown = [o for o in self.opts if o not in self.hidden_aliases]
        opts, self.opts = self.opts, shown
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = opts


OUTPUT_HELP = "Write the output to FILE instead of the terminal (an existing file is replaced atomically; its folder must exist)."
REPLACED = "replaced atomically if it exists; its folder must exist"


def output_option(
    help: str = OUTPUT_HELP, old: Sequence[str] = ("--out",), **kwargs: Any
) -> Callable[[F], F]:
    """``-o/--output FILE``: the one spelling of an output file (the ``old`` spellings still accepted)."""
    return click.option(
        "-o",
        "--output",
        *old,
        "output",
        cls=AliasedOption,
        hidden_aliases=tuple(old),
        type=click.Path(path_type=Path),
        metavar="FILE",
        help=help,
        **kwargs,
    )


def out_dir_option(help: str, old: Sequence[str] = ("--out",), **kwargs: Any) -> Callable[[F], F]:
    """``-d/--out-dir DIR``: the one spelling of an output folder (the ``old`` spellings still accepted)."""
    return click.option(
        "-d",
        "--out-dir",
        *old,
        "out_dir",
        cls=AliasedOption,
        hidden_aliases=tuple(old),
        type=click.Path(path_type=Path),
        metavar="DIR",
        help=help,
        **kwargs,
    )


def quiet_option(help: str = "Print only errors and the one-line outcome.") -> Callable[[F], F]:
    """``-q/--quiet`` on every command."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


# ------------------------------------------------------------------------------------------- outputs


def write_output(path: Path, text: str, option: str) -> None:
    """Write ``text`` to ``path`` atomically; a write error names ``option`` (one line, exit 2)."""
    from launchbench.files import atomic_write_text

    atomic_write_text(Path(path), text, option)


def check_outputs(options: list[tuple[str, Path | str | None]], inputs: list[str]) -> dict[str, Path]:
    """Every output path checked before any work: writable folder, not a folder or a special file, not
    one of the inputs, not given to two options."""
    from launchbench.files import OutputError, check_output_file
    from launchbench.results.store import resolve_results_file

    chosen: dict[str, Path] = {}
    seen: dict[str, str] = {}
    input_files = {_same_file_key(resolve_results_file(p)) for p in inputs} | {
        _same_file_key(Path(p)) for p in inputs
    }
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


def emit(
    fmt: str,
    renderers: dict[str, Callable[[], str]],
    draw: Callable[[Any], None],
    output: Path | None,
    outcome: str,
    quiet: bool,
) -> None:
    """Print or write a report. ``renderers`` give each data format's text; ``draw`` prints the table format on
    a rich console. The one-line ``outcome`` goes to stdout after the table or the file, to stderr after data
    on stdout; with ``quiet`` the table is left out."""
    from launchbench.report.compare_console import render_text
    from launchbench.report.console import make_console

    if output is not None:
        write_output(output, render_text(draw) if fmt == "table" else renderers[fmt](), "-o")
        click.echo(outcome if quiet else f"wrote {output}; {outcome}")
    elif fmt != "table":
        click.echo(renderers[fmt](), nl=False)
        click.echo(outcome, err=True)
    elif quiet:
        click.echo(outcome)
    else:
        draw(make_console())
