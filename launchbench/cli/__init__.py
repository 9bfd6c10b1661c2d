"""The command line: each command parses, makes one library call, and maps the outcome to an exit code.

Exit codes: 0 success; 1 a regression, a failed expectation or a failed case; 2 usage or input error
(bad scenario, bad results file, no usable GPU); 130 interrupted.
"""

from __future__ import annotations

import sys

import click

from launchbench import __version__
from launchbench.cli import ab as cli_ab
from launchbench.cli import compare as cli_compare
from launchbench.cli import graph as cli_graph
from launchbench.cli import plot as cli_plot
from launchbench.cli import run as cli_run
from launchbench.cli.common import EXIT_INTERRUPTED


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="launchbench")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """launchbench: what launching a chain of GPU kernels one by one costs, and what a CUDA Graph saves."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


for _module in (cli_run, cli_compare, cli_ab, cli_plot, cli_graph):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    try:
        cli.main(prog_name="launchbench", standalone_mode=True)
    except KeyboardInterrupt:
        click.echo("launchbench: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
