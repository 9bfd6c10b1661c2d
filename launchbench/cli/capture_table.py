"""capture-table: the batch-size table of graph capture cost from a run (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import click

from launchbench.cli.common import (
    handle_errors,
    image_format_option,
    out_dir_option,
    quiet_option,
    short_help,
)


@click.command("capture-table", short_help=short_help("capture-table"))
@click.argument("run", type=click.Path())
@click.option(
    "--axis",
    default="batch",
    show_default=True,
    help="The sweep axis that holds the size (the batch size of a serving sweep).",
)
@out_dir_option("Folder for the table and figure, created with its parents (default: capture/ inside RUN).")
@image_format_option()
@quiet_option("Print only the paths written (not the table).")
@handle_errors
def capture_table(run: str, axis: str, out_dir: Path | None, fmt: str, quiet: bool) -> None:
    """Tabulate each graph mode's capture cost per size of a sweep, with the break-even in steps.

    Per size: eager against the graph per step, capture time and memory, the cumulative time and
    memory to capture every size up to that one, and the steps until the graph pays back.
    RUN is a run directory or its results.json; the size is the sweep axis --axis. Writes
    capture_table.csv (one row per chain, graph mode and size; docs/torch.md lists the columns),
    capture_table.md and a figure per chain, and prints the Markdown table and the paths.

    Exit 0 when written, 2 on a usage or input error (no run, no sweep over the axis).
    """
    from launchbench.files import check_output_dir
    from launchbench.report.plots.capture import write_capture_files
    from launchbench.results.store import load_run, resolve_results_file

    target = out_dir if out_dir is not None else resolve_results_file(run).parent / "capture"
    check_output_dir(target, "-d")
    written = write_capture_files(load_run(run), target, axis, fmt)
    if not quiet:
        click.echo(written[1].read_text(encoding="utf-8"))
    for path in written:
        click.echo(str(path))


command = capture_table
