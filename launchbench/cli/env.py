"""env: what GPU, driver, CUDA, CuPy and host launchbench sees."""

from __future__ import annotations

import sys
from typing import Any

import click

from launchbench.cli.common import EXIT_OK, EXIT_USAGE, device_option, handle_errors, quiet_option, short_help
from launchbench.errors import LaunchbenchError


@click.command("env", short_help=short_help("env"))
@device_option()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(("table", "markdown", "csv", "json")),
    default="table",
    show_default=True,
    help="Output format (json: docs/schemas/env.schema.json).",
)
@click.option("--json", "as_json", is_flag=True, hidden=True, help="Kept for old scripts: --format json.")
@quiet_option("Print nothing; the exit code says whether a GPU is usable.")
@handle_errors
def env(device: int, fmt: str, as_json: bool, quiet: bool) -> None:
    """Show the GPU, driver, CUDA, CuPy and host launchbench sees.

    Exit 0 when the GPU is usable, 2 when it is not (the host is still shown, with the reason).
    """
    from launchbench.backend.gpu_probe import collect_environment, require_gpu
    from launchbench.results.environment import host_environment

    try:
        require_gpu(device)
        info = collect_environment(device)
        problem = None
    except LaunchbenchError as err:
        info = host_environment()
        problem = str(err)
    if quiet:
        pass
    elif as_json or fmt == "json":
        from launchbench.report.documents import EnvironmentDocument, to_json

        click.echo(to_json(EnvironmentDocument.model_validate({**info, "gpu_problem": problem})), nl=False)
    else:
        click.echo(render_items(environment_items(info, problem), fmt), nl=False)
    sys.exit(EXIT_USAGE if problem else EXIT_OK)


def environment_items(info: dict[str, Any], problem: str | None) -> list[tuple[str, str]]:
    """(item, value) lines of an environment: a nested part as key=value pairs, the GPU's problem last."""
    items = []
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        items.append((key, str(value)))
    if problem:
        items.append(("gpu", f"none — {problem}"))
    return items


def render_items(items: list[tuple[str, str]], fmt: str) -> str:
    """The items as aligned text (table), a two-column markdown table or CSV."""
    if fmt == "csv":
        import csv
        import io

        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerows([("item", "value"), *items])
        return buffer.getvalue()
    if fmt == "markdown":
        cells = [f"| {k} | {v.replace('|', chr(92) + '|')} |" for k, v in items]
        return "\n".join(["| item | value |", "| --- | --- |", *cells]) + "\n"
    return "".join(f"{key:>14}: {value}\n" for key, value in items)


command = env
