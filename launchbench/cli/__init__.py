"""The command line: each command parses, makes one library call, and maps the outcome to an exit code.

Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input error
(bad scenario, bad results file, no usable GPU); 130 interrupted.

Every command lives in its own module, listed in COMMANDS, and is imported only when it runs or its help
is shown, so ``launchbench --help`` and ``--version`` load neither the statistics nor the plotting stack.
A command module defines ``command`` (a click.Command named like its entry here).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from typing import NamedTuple, NoReturn

import click

from launchbench import __version__
from launchbench.cli.common import EXIT_INTERRUPTED, EXIT_USAGE


class Entry(NamedTuple):
    module: str
    short_help: str  # the first sentence of the command's help; a test keeps the two equal


COMMANDS: dict[str, Entry] = {
    "run": Entry("launchbench.cli.run", "Measure scenario files: every case eagerly and as a CUDA Graph."),
    "validate": Entry("launchbench.cli.validate", "Check scenario files without a GPU."),
    "env": Entry("launchbench.cli.env", "Show the GPU, driver, CUDA, CuPy and host launchbench sees."),
    "compare": Entry("launchbench.cli.compare", "Compare two runs: BASELINE → CURRENT."),
    "ab": Entry("launchbench.cli.ab", "Measure two variants A and B of the same scenarios interleaved."),
    "check": Entry("launchbench.cli.check", "Check a run against the expectations of its scenario files."),
    "plot": Entry("launchbench.cli.plot", "Draw figures from result files; no GPU needed."),
    "graph": Entry("launchbench.cli.graph", "Capture one case and write its CUDA Graph as DOT, SVG or PNG."),
    "capture-table": Entry(
        "launchbench.cli.capture_table",
        "Tabulate each graph mode's capture cost per size of a sweep, with the break-even in steps.",
    ),
    "merge": Entry(
        "launchbench.cli.merge",
        "Merge runs into one: the shards of a run, or each node's or device's run of the same scenarios.",
    ),
    "fleet": Entry(
        "launchbench.cli.fleet",
        "Run on a fleet: Slurm and Kubernetes launchers, and a report that names the slow nodes.",
    ),
    "floor": Entry(
        "launchbench.cli.floor",
        "Measure the launch path layer by layer: C over the driver API, cuda-bindings, CuPy, torch.",
    ),
    "history": Entry(
        "launchbench.cli.history",
        "Keep runs in a database and follow them: trends, change points, an HTML report.",
    ),
}


def load_command(name: str) -> click.Command:
    """The command ``name`` from its module (imported now)."""
    command = importlib.import_module(COMMANDS[name].module).command
    assert isinstance(command, click.Command) and command.name == name, name
    return command


class LazyGroup(click.Group):
    """A group that imports a command's module only when that command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return load_command(cmd_name) if cmd_name in COMMANDS else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry.short_help) for name, entry in COMMANDS.items()])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="launchbench")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """launchbench: what launching a chain of GPU kernels one by one costs, and what a CUDA Graph saves.

    Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input
    error; 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if not debug:  # numpy/scipy/pandas warnings on odd data are not the user's business; --debug shows them
        warnings.simplefilter("ignore")


def _tolerant_streams() -> None:
    """Text the terminal's encoding cannot show (LANG=C, PYTHONIOENCODING=ascii) is escaped, not an error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _output_failed(err: OSError) -> NoReturn:
    """stdout cannot be written (a full device, a closed pipe): one line on stderr, exit 2. An error that
    names a file is not stdout's: every file launchbench writes goes through launchbench.files (an
    OutputError), so it is a file being read, and the line says so and names it."""
    from launchbench.files import os_reason

    if err.filename is not None:
        message = f"{err.filename}: cannot be read: {os_reason(err)}"
    else:
        message = f"cannot write the output: {os_reason(err)}"
    try:
        sys.stderr.write(f"launchbench: error: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    try:  # nothing more may reach the broken stream at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(EXIT_USAGE)


def main() -> None:
    # Before NumPy is imported: OpenBLAS starts a thread per core as it loads, and no command multiplies
    # matrices large enough to gain from a second one. On the H200 host's 16 cores, a compare of two
    # 1,000-case runs took 7.5-8.5 s of CPU with them and 3.2-4.7 s without, in about the same wall time
    # (results/speed/compare-openblas-h200.json).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # a value the user set is kept
    _tolerant_streams()
    try:
        try:
            # not standalone: click would turn an interrupt anywhere (a summary being printed) into exit 1
            code = cli.main(prog_name="launchbench", standalone_mode=False)
        finally:
            sys.stdout.flush()
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("launchbench: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as exit_:
        sys.exit(exit_.exit_code)
    except OSError as err:  # from writing stdout: the commands' own I/O errors are LaunchbenchErrors
        _output_failed(err)
    if isinstance(code, int) and code:
        sys.exit(code)
