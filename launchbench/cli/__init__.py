"""The command line: each command parses, makes one library call, and maps the outcome to an exit code.

Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input error
(bad scenario, bad results file, no usable GPU); 130 interrupted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from typing import NoReturn

import click

from launchbench import __version__
from launchbench.cli import ab as cli_ab
from launchbench.cli import compare as cli_compare
from launchbench.cli import graph as cli_graph
from launchbench.cli import plot as cli_plot
from launchbench.cli import run as cli_run
from launchbench.cli.common import EXIT_INTERRUPTED, EXIT_USAGE
from launchbench.files import os_reason


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="launchbench")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """launchbench: what launching a chain of GPU kernels one by one costs, and what a CUDA Graph saves."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if not debug:  # numpy/scipy/pandas warnings on odd data are not the user's business; --debug shows them
        warnings.simplefilter("ignore")


for _module in (cli_run, cli_compare, cli_ab, cli_plot, cli_graph):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def _tolerant_streams() -> None:
    """Text the terminal's encoding cannot show (LANG=C, PYTHONIOENCODING=ascii) is escaped, not an error."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _output_failed(err: OSError) -> NoReturn:
    """stdout cannot be written (a full device, a closed pipe): one line on stderr, exit 2."""
    try:
        sys.stderr.write(f"launchbench: error: cannot write the output: {os_reason(err)}\n")
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
    _tolerant_streams()
    try:
        try:
            cli.main(prog_name="launchbench", standalone_mode=True)
        finally:
            sys.stdout.flush()
    except KeyboardInterrupt:
        click.echo("launchbench: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except OSError as err:  # from writing stdout: the commands' own I/O errors are LaunchbenchErrors
        _output_failed(err)
