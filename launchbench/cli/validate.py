"""validate: check scenario files without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from launchbench.cli.common import EXIT_OK, handle_errors, quiet_option, short_help
from launchbench.errors import LaunchbenchError


@click.command("validate", short_help=short_help("validate"))
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--max-cases",
    type=click.IntRange(min=1),
    default=None,
    help="Allow sweeps with more cases than the file's max_cases.",
)
@quiet_option("Print only errors.")
@handle_errors
def validate(scenarios: tuple[str, ...], max_cases: int | None, quiet: bool) -> None:
    """Check scenario files without a GPU: YAML, keys, types, sweeps, expectations and every expanded case.

    Files are checked as `run` would take them together: the same file twice, or two files with one
    scenario name, are refused. Prints one line per file: the number of cases and the launches one pass
    over them issues.

    Exit 0 when every file is valid, 2 on the first invalid file (its path, line and key path).
    """
    from launchbench.analysis.expectations import load_checked
    from launchbench.scenario.expand import iter_cases, sweep_warnings

    names: dict[str, str] = {}
    seen: set[str] = set()
    for path in scenarios:
        key = _file_key(path)
        if key in seen:
            raise LaunchbenchError(f"{path}: given twice")
        seen.add(key)
        loaded, _ = load_checked(path, max_cases)
        name = loaded.scenario.name
        if name in names:
            raise LaunchbenchError(f"{path}: scenario name '{name}' is used by another file ({names[name]})")
        names[name] = path
        for warning in sweep_warnings(loaded, max_cases):
            click.echo(f"launchbench: warning: {warning}", err=True)
        count = launches = 0
        for case in iter_cases(loaded, max_cases):  # one case at a time
            count += 1
            launches += case.launches_per_iter
        if not quiet:
            devices = loaded.scenario.devices
            on = f", each on {devices} GPUs (one rank per GPU)" if devices > 1 else ""
            click.echo(f"{path}: ok — {count} cases{on}, {launches} launches per pass over all cases")
    sys.exit(EXIT_OK)


def _file_key(path: str) -> str:
    """The same file named twice (a.yaml, ./a.yaml, a link to it) gives the same key."""
    try:
        return str(Path(path).resolve(strict=False))
    except (OSError, RuntimeError):  # a symlink loop: reported by the loader
        return path


command = validate
