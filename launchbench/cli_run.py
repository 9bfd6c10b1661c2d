"""run, validate and env commands."""

from __future__ import annotations

import sys

import click

from launchbench.cli_common import EXIT_OK, handle_errors
from launchbench.scenario.expand import expand_scenario


@click.command()
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--max-cases", type=click.IntRange(min=1), default=None, help="Allow sweeps with more cases than the file's max_cases.")
@handle_errors
def validate(scenarios: tuple[str, ...], max_cases: int | None) -> None:
    """Check scenario files without a GPU: YAML, keys, types, sweeps and every expanded case."""
    for path in scenarios:
        cases = expand_scenario(path, max_cases=max_cases)
        launches = sum(c.launches_per_iter for c in cases)
        click.echo(f"{path}: ok — {len(cases)} cases, {launches} launches per pass over all cases")
    sys.exit(EXIT_OK)


COMMANDS: list[click.Command] = [validate]
