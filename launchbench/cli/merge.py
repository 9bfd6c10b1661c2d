"""merge: one run from shards, nodes' runs or devices' runs (results.merge_runs checks they belong together)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from launchbench.cli.common import EXIT_OK, handle_errors, out_dir_option, quiet_option, short_help


@click.command("merge", short_help=short_help("merge"))
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@out_dir_option(
    "Run directory to write the merged run into (created; never one that holds results).", required=True
)
@quiet_option()
@handle_errors
def merge(runs: tuple[Path, ...], out_dir: Path, quiet: bool) -> None:
    """Merge runs into one: the shards of a run, or each node's or device's run of the same scenarios.

    Every case keeps the node (host name) and CUDA device that measured it: both are columns of the
    merged results.csv. Refused (one line, exit 2) when the runs differ in results schema, launchbench
    version, scenario files (sha256), measurement settings, GPU model, CuPy or CUDA runtime, when one is
    not complete, or when shards of N are missing or repeated; driver, CPU, kernel and the rest of the
    host may differ.

    Exit 0 when merged, 2 on a usage or input error.
    """
    from launchbench.report.run_files import write_run_files
    from launchbench.results.merge_runs import merge_runs, read_source
    from launchbench.results.store import create_run_dir, refuse_used_run_dir

    refuse_used_run_dir(out_dir)
    record = merge_runs([read_source(run) for run in runs], argv=sys.argv)
    create_run_dir(out_dir)
    write_run_files(out_dir, record)
    if not quiet:
        nodes = sorted({m.node for m in record.members})
        click.echo(
            f"merged {len(record.members)} runs ({len(record.cases)} cases; nodes: {', '.join(nodes)}) into {out_dir}"
        )
    sys.exit(EXIT_OK)


command = merge
