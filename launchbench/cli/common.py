"""What every command shares: exit codes, the error handler and the options spelled alike everywhere.

Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input error
(bad scenario, bad results file, no usable GPU); 130 interrupted.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from launchbench.errors import LaunchbenchError

if TYPE_CHECKING:
    from launchbench.run.overrides import Preset

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

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
    return _path_option("-o", "--output", "FILE", help, old, **kwargs)


def out_dir_option(help: str, old: Sequence[str] = ("--out",), **kwargs: Any) -> Callable[[F], F]:
    """``-d/--out-dir DIR``: the one spelling of an output folder (the ``old`` spellings still accepted)."""
    return _path_option("-d", "--out-dir", "DIR", help, old, **kwargs)


def _path_option(
    short: str, name: str, metavar: str, help: str, old: Sequence[str], **kwargs: Any
) -> Callable[[F], F]:
    return click.option(
        short,
        name,
        *old,
        name.lstrip("-").replace("-", "_"),
        cls=AliasedOption,
        hidden_aliases=tuple(old),
        type=click.Path(path_type=Path),
        metavar=metavar,
        help=help,
        **kwargs,
    )


def image_format_option() -> Callable[[F], F]:
    """``--format png|svg`` of the commands that draw figures."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["png", "svg"]),
        default="png",
        show_default=True,
        help="Image format.",
    )


def quiet_option(help: str = "Print only errors and the one-line outcome.") -> Callable[[F], F]:
    """``-q/--quiet`` on every command."""
    return click.option("-q", "--quiet", is_flag=True, help=help)


def _jobs_or_cpus(ctx: click.Context, param: click.Parameter, value: int) -> int:
    from launchbench.forked import usable_cpus

    return value or usable_cpus()


def jobs_option(what: str) -> Callable[[F], F]:
    """``-j/--jobs``: how many processes ``what`` is made in at once; the command gets a count, 0 (the
    default) turned into one per CPU this process may use (forked.usable_cpus)."""
    return click.option(
        "-j",
        "--jobs",
        type=click.IntRange(0, 256),
        default=0,
        show_default=True,
        callback=_jobs_or_cpus,
        help=f"{what} at most this many processes at once, each forked from this one; 0: one per CPU "
        "this process may use, 1: all in this process.",
    )


def stack(*options: Callable[[F], F]) -> Callable[[F], F]:
    """Several options as one decorator, in --help in the order given."""

    def apply(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return apply


def run_dir_options() -> Callable[[F], F]:
    """``-d/--out-dir DIR`` and ``--results-root PATH``: where a new run directory goes."""
    return stack(
        out_dir_option(
            "Run directory, created with its parents (default: <results-root>/<timestamp>-<scenario>); never one that holds results."
        ),
        click.option(
            "--results-root",
            type=click.Path(path_type=Path),
            default=Path("results"),
            show_default=True,
            help="Where default run directories go (created with its parents).",
        ),
    )


def device_option() -> Callable[[F], F]:
    """``--device N``: the CUDA device index."""
    return click.option(
        "--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index."
    )


BACKEND_VARIABLE = "LAUNCHBENCH_BACKEND"


def backend_option() -> Callable[[F], F]:
    """``--backend MODULE:FUNCTION`` (or $LAUNCHBENCH_BACKEND): the backend factory the workers start."""
    return click.option(
        "--backend",
        "backend",
        envvar=BACKEND_VARIABLE,
        metavar="MODULE:FUNCTION",
        help=f"Backend factory the worker processes call with the device index (default: the CuPy backend, launchbench.run.worker:cupy_backend; also ${BACKEND_VARIABLE}).",
    )


def metric_option(help: str) -> Callable[[F], F]:
    """``-m/--metric`` (repeatable): one of the results' metrics."""
    from launchbench.results.metrics import METRIC_BY_NAME

    return click.option(
        "-m", "--metric", "metrics", multiple=True, type=click.Choice(list(METRIC_BY_NAME)), help=help
    )


def parsed_option(
    name: str, dest: str, metavar: str, parse: Callable[[str], Any], help: str
) -> Callable[[F], F]:
    """A repeatable option whose values are ``parse``d into a list; a LaunchbenchError from ``parse`` is a
    usage error naming the option."""

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[Any]:
        try:
            return [parse(v) for v in values]
        except LaunchbenchError as err:
            raise click.BadParameter(str(err), ctx=ctx, param=param) from None

    return click.option(name, dest, multiple=True, metavar=metavar, callback=callback, help=help)


def allow_options(**helps: str) -> Callable[[F], F]:
    """``--allow-NAME`` flags, each relaxing one rule of what fails a gate or a check, with the help
    ``helps[NAME]`` (an underscore in NAME is a dash in the flag)."""
    return stack(
        *(
            click.option(f"--allow-{name.replace('_', '-')}", is_flag=True, help=text)
            for name, text in helps.items()
        )
    )


# ------------------------------------------------------------------------------------------- outputs


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


# ------------------------------------------------------------------------------------------- measuring


@dataclass(frozen=True)
class MeasureArgs:
    """The measurement options run and ab share, as click parsed them (None: not given)."""

    target_noise: float | None
    max_time: float | None
    min_samples: int | None
    quick: bool

    def given(self) -> dict[str, float | int | None]:
        return {"target_noise": self.target_noise, "max_time": self.max_time, "min_samples": self.min_samples}

    @property
    def preset(self) -> Preset:
        from launchbench.run.overrides import Preset

        return Preset.QUICK if self.quick else Preset.FILE


def terminate_as_interrupt(_signum: int, _frame: Any) -> None:
    """A SIGTERM handler: the run ends as on Ctrl-C (what it measured is kept)."""
    raise KeyboardInterrupt


@contextmanager
def usage_errors(*kinds: type[Exception]) -> Iterator[None]:
    """An error of ``kinds`` raised in the block is a usage error with its message (exit 2)."""
    try:
        yield
    except kinds as err:
        raise click.UsageError(str(err)) from None


def warn_unused_axes(the_plan: Any, max_cases: int | None) -> None:
    """A warning (stderr, one line each) for every sweep axis no step of its file uses."""
    from launchbench.scenario.expand import sweep_warnings

    for loaded in the_plan.files:
        for warning in sweep_warnings(loaded, max_cases):
            click.echo(f"launchbench: warning: {warning}", err=True)
