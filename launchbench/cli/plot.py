"""plot: figures from result files (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import click

from launchbench.cli.common import handle_errors, out_dir_option, quiet_option, short_help


@click.command("plot", short_help=short_help("plot"))
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@out_dir_option(
    "Folder for the figures, created with its parents (default: plots/ inside the first run's directory); "
    "existing figures of the same name are replaced."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["png", "svg"]),
    default="png",
    show_default=True,
    help="Image format.",
)
@quiet_option("Print only errors (not the path of every file written).")
@handle_errors
def plot(runs: tuple[str, ...], out_dir: Path | None, fmt: str, quiet: bool) -> None:
    """Draw figures from result files (RUN: a run directory or its results.json); no GPU needed.

    One run: wall time and CPU time per launch, speedup, the graph's life cycle and the sample
    distributions. Several runs: each run's figures in its own subfolder. Two runs (BASE CUR): also
    comparison_ratio, the current / baseline ratio per case. Prints the path of every file written.

    Exit 0 when the figures are written, 2 on a usage or input error.
    """
    from launchbench.files import check_output_dir
    from launchbench.report.plots import write_all_plots  # matplotlib only when plotting
    from launchbench.results.store import load_run, resolve_results_file

    target = out_dir if out_dir is not None else resolve_results_file(runs[0]).parent / "plots"
    check_output_dir(target, "-d")
    records = [load_run(run) for run in runs]
    labels = [resolve_results_file(run).parent.resolve().name or f"run{i + 1}" for i, run in enumerate(runs)]
    paths = write_all_plots(records, target, fmt, labels=labels)
    if not quiet:
        for path in paths:
            click.echo(str(path))


command = plot
