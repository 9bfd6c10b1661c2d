"""plot: figures from result files (no GPU needed)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchbench.cli.common import (
    handle_errors,
    image_format_option,
    jobs_option,
    out_dir_option,
    quiet_option,
    short_help,
)

if TYPE_CHECKING:
    from launchbench.analysis.compare import Comparison
    from launchbench.results.schema import RunRecord

DEFAULT_DPI = 200  # launchbench.report.plots.style.DPI, without loading matplotlib for --help


@click.command("plot", short_help=short_help("plot"))
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@out_dir_option(
    "Folder for the figures, created with its parents (default: plots/ inside the first run's directory); "
    "existing figures of the same name are replaced."
)
@image_format_option()
@click.option(
    "--dpi",
    type=click.IntRange(30, 1200),
    default=DEFAULT_DPI,
    show_default=True,
    help="Pixels per inch of a PNG; figures are 8 inches wide (1600 px at the default, for a slide).",
)
@jobs_option("The table's rows (for 100 cases or more) and the figures made in")
@quiet_option("Print only errors (not the path of every file written, nor the figures left out).")
@handle_errors
def plot(runs: tuple[str, ...], out_dir: Path | None, fmt: str, dpi: int, jobs: int, quiet: bool) -> None:
    """Draw figures from result files (RUN: a run directory or its results.json); no GPU needed.

    One run: wall time and CPU time per launch, speedup, the graph's life cycle and the sample
    distributions (chains measured at one length each drawn together as grouped bars), and the cost
    per iteration of chains whose sizes change. Several runs: each run's figures in its own subfolder.
    Two runs (BASE CUR): also comparison_ratio, the current / baseline ratio per case with the
    interval and verdict `launchbench compare BASE CUR` gives it (the two sides of one ab run paired
    round by round, as compare pairs them). Prints the path of every file written; a figure with
    nothing to show is not written, and a line on stderr says which and why.

    Exit 0 when the figures are written, 2 on a usage or input error.
    """
    from launchbench.files import check_output_dir
    from launchbench.results.document import kept_to_the_end
    from launchbench.results.store import load_run, resolve_results_file

    target = out_dir if out_dir is not None else resolve_results_file(runs[0]).parent / "plots"
    check_output_dir(target, "-d")
    with kept_to_the_end():  # the runs and matplotlib's modules out of the collector's walks
        records = [load_run(run) for run in runs]
        # matplotlib only once the runs are read, so that a refusal is quick
        from launchbench.report.plots import draw_plots
    labels = [resolve_results_file(run).parent.resolve().name or f"run{i + 1}" for i, run in enumerate(runs)]
    comparison = comparison_of(records, runs) if len(runs) == 2 else None
    written = draw_plots(records, target, fmt, labels=labels, dpi=dpi, comparison=comparison, jobs=jobs)
    if not quiet:
        for path in written.paths:
            click.echo(str(path))
        for skipped in written.skipped:
            click.echo(f"launchbench: not writing {skipped.path}: {skipped.reason}", err=True)


def comparison_of(records: list[RunRecord], runs: tuple[str, ...]) -> Comparison:
    """The Comparison `launchbench compare BASE CUR` makes of two runs at its defaults (every default
    metric, so the p adjustment over rows and the noise priors are the command's), the two sides of one
    `launchbench ab` run paired round by round as compare pairs them; runs on different GPU models are
    drawn (compare refuses them without --allow-different-gpu)."""
    from launchbench.analysis.compare import compare_runs
    from launchbench.analysis.comparison import GpuMismatch
    from launchbench.api import pair_design

    base, cur = records
    design = pair_design((runs[0], base), (runs[1], cur))
    return compare_runs(base, cur, gpu_mismatch=GpuMismatch.ALLOW, design=design)


command = plot
