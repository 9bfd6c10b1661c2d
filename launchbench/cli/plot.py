"""plot command: figures from result files (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

import click

from launchbench.cli.common import handle_errors
from launchbench.files import check_output_dir
from launchbench.results.store import load_run, resolve_results_file


def _run_labels(runs: tuple[str, ...]) -> list[str]:
    """Each run's directory name (subfolder names when several runs are plotted)."""
    return [resolve_results_file(run).parent.resolve().name or f"run{i + 1}" for i, run in enumerate(runs)]


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Folder for the figures, created with its parents (default: plots/ inside the first run's directory); "
    "existing figures of the same name are replaced.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["png", "svg"]), default="png", show_default=True, help="Image format."
)
@handle_errors
def plot(runs: tuple[str, ...], out_dir: Path | None, fmt: str) -> None:
    """Draw figures from result files (RUN: a run directory or its results.json); no GPU needed.

    One run: wall time and CPU time per launch, speedup, the graph's life cycle and the sample
    distributions. Several runs: each run's figures in its own subfolder. Two runs (BASE CUR): also
    comparison_ratio, the current / baseline ratio per case. Prints the path of every file written.
    """
    from launchbench.report.plots import write_all_plots  # matplotlib only when plotting

    target = out_dir if out_dir is not None else resolve_results_file(runs[0]).parent / "plots"
    check_output_dir(target, "--out")
    records = [load_run(run) for run in runs]
    paths = write_all_plots(records, target, fmt, labels=_run_labels(runs))
    for path in paths:
        click.echo(str(path))


COMMANDS: list[click.Command] = [plot]
