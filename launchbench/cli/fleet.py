"""fleet: launchers for the engines fleets run on (Slurm, Kubernetes) and the fleet report."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from launchbench.cli.common import (
    EXIT_FAIL,
    EXIT_OK,
    handle_errors,
    out_dir_option,
    output_option,
    quiet_option,
    short_help,
)
from launchbench.errors import LaunchbenchError


@click.group("fleet", short_help=short_help("fleet"))
@quiet_option("Print only errors and outliers (each subcommand takes -q too).")
def fleet(quiet: bool) -> None:
    """Run on a fleet: Slurm and Kubernetes launchers, and a report that names the slow nodes.

    `fleet slurm` writes (and with --submit submits) a Slurm job array and a merge job that runs after it;
    `fleet k8s` writes an Indexed Job manifest; `fleet report` scores every node and GPU of a merged run
    against the fleet and its own history. See docs/fleet.md.

    Exit 0 on success, 1 when `fleet report --fail-on-outlier` finds an outlier, 2 on a usage or input error."""


def _quiet(own: bool = False) -> bool:
    """-q given to the subcommand or to `fleet` itself."""
    ctx = click.get_current_context(silent=True)
    parent = ctx.parent if ctx is not None else None
    return own or bool(parent is not None and parent.params.get("quiet"))


def _run_args(text: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text))
    except ValueError as err:
        raise click.BadParameter(f"{text!r}: {err}", param_hint="--run-args") from None


def _shard_count(scenario: Path, shards: int) -> None:
    """Refuse more shards than the scenario has cases (a shard without a case fails its task)."""
    from launchbench.run.runner import plan

    cases = len(plan([scenario]).cases)
    if shards > cases:
        raise LaunchbenchError(
            f"{scenario}: reading: holds {cases} cases; --shards {shards} would leave shards empty"
        )


@fleet.command("slurm", short_help="Write a Slurm job array for SCENARIO and its merge job.")
@click.argument("scenario", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--nodes",
    type=click.IntRange(min=1),
    help="A job array of N tasks, each taking a node whole (--exclusive) and running every case; Slurm picks the nodes (--nodelist names them).",
)
@click.option(
    "--nodelist",
    metavar="NODE,NODE,...",
    help="One job per listed node (sbatch -w), each running every case.",
)
@click.option(
    "--shards",
    type=click.IntRange(min=1),
    help="A job array of N tasks, task K running shard K/N of the cases.",
)
@click.option("--partition", metavar="P", help="Slurm partition of every job.")
@click.option(
    "--gpus",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="GPUs per task (--gpus-per-task; 0 asks for none).",
)
@click.option("--time", "time_limit", metavar="TIME", help="Slurm time limit of every job (e.g. 00:30:00).")
@click.option(
    "--run-args",
    default="",
    metavar="ARGS",
    help="More options for each task's `launchbench run` (e.g. '--quick').",
)
@click.option(
    "--shared",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory every node can write (runs/, merged/, logs/ go there).",
)
@out_dir_option("Where the scripts go (default: SHARED/slurm).")
@click.option(
    "--submit",
    is_flag=True,
    help="Hand the scripts to sbatch (submit.sh): the tasks, then the merge job after they all succeed.",
)
@quiet_option("Print only the job ids (with --submit) and errors.")
@handle_errors
def slurm(scenario: Path, nodes: int | None, nodelist: str | None, shards: int | None, partition: str | None,
          gpus: int, time_limit: str | None, run_args: str, shared: Path, out_dir: Path | None, submit: bool,
        quiet: bool) -> None:  # fmt: skip
    """Write a Slurm job array that runs SCENARIO, one task per node or per shard, and a merge job.

    The scripts call $LAUNCHBENCH (default: this interpreter with -m launchbench). Exit 0 when written
    (and submitted), 2 on a usage error or when sbatch refuses."""
    from launchbench.fleet.slurm import SUBMIT_SCRIPT, SlurmJob, write_scripts

    given = [
        name for name, value in (("--nodes", nodes), ("--nodelist", nodelist), ("--shards", shards)) if value
    ]
    if len(given) != 1:
        raise click.UsageError("give one of --nodes N, --nodelist NODE,... or --shards N")
    listed = tuple(n.strip() for n in (nodelist or "").split(",") if n.strip())
    if nodelist is not None and not listed:
        raise click.BadParameter("name at least one node", param_hint="--nodelist")
    if shards:
        _shard_count(scenario, shards)
    job = SlurmJob(
        scenario=scenario.resolve(), shared=shared.resolve(), tasks=nodes or shards or len(listed),
        nodelist=listed, sharded=bool(shards), partition=partition, gpus=gpus, time_limit=time_limit,
        run_args=_run_args(run_args),
    )  # fmt: skip
    folder = (out_dir or shared / "slurm").resolve()
    for path in write_scripts(job, folder):
        if not _quiet(quiet):
            click.echo(f"wrote {path}")
    if submit:
        _submit(folder / SUBMIT_SCRIPT)
    sys.exit(EXIT_OK)


def _submit(script: Path) -> None:
    import shutil

    if shutil.which("sbatch") is None:
        raise LaunchbenchError(
            f"{script}: cannot submit: sbatch is not on PATH (submit the script on a Slurm login node)"
        )
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise LaunchbenchError(f"{script}: sbatch refused the jobs: {last}")
    click.echo(done.stdout.rstrip())


@fleet.command("k8s", short_help="Write a Kubernetes Indexed Job that runs SCENARIO in shards.")
@click.argument("scenario", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option(
    "--completions",
    type=click.IntRange(min=1),
    required=True,
    help="Pods (shards): pod JOB_COMPLETION_INDEX runs shard INDEX/N.",
)
@click.option("--parallelism", type=click.IntRange(min=1), help="Pods at a time (default: all).")
@click.option(
    "--image", required=True, help="Container image with launchbench installed (launchbench on its PATH)."
)
@click.option(
    "--claim",
    default="launchbench-results",
    show_default=True,
    help="PersistentVolumeClaim mounted at /results in every pod.",
)
@click.option(
    "--gpus", type=click.IntRange(min=0), default=1, show_default=True, help="nvidia.com/gpu per pod."
)
@click.option("--namespace", help="Namespace of the Job and its ConfigMap.")
@click.option("--run-args", default="", metavar="ARGS", help="More options for each pod's `launchbench run`.")
@output_option(help="Write the manifest to FILE instead of the terminal.", old=())
@quiet_option("Print only the manifest (no note of the file written) and errors.")
@handle_errors
def k8s(scenario: Path, completions: int, parallelism: int | None, image: str, claim: str, gpus: int,
        namespace: str | None, run_args: str, output: Path | None, quiet: bool) -> None:  # fmt: skip
    """Write a Kubernetes Indexed Job that runs SCENARIO in shards, one GPU per pod.

    The manifest holds a ConfigMap with the scenario file and the Job; each pod writes
    /results/runs/shard-INDEX. Exit 0 when written, 2 on a usage error."""
    from launchbench.files import atomic_write_text
    from launchbench.fleet.k8s import IndexedJob, manifest_text

    _shard_count(scenario, completions)
    job = IndexedJob(
        scenario.resolve(), completions, image, claim, parallelism, gpus, namespace, _run_args(run_args)
    )
    text = manifest_text(job)
    if output is None:
        click.echo(text, nl=False)
    else:
        atomic_write_text(output, text)
        if not _quiet(quiet):
            click.echo(f"wrote {output}", err=True)
    sys.exit(EXIT_OK)


def _threshold(text: str | None) -> float | None:
    if text is None:
        return None
    number = text.strip().removesuffix("%")
    try:
        value = float(number) / 100
    except ValueError:
        value = -1.0
    if not 0 < value < 100:
        raise click.BadParameter(
            f"{text!r}: give a percentage above 0, e.g. 10%", param_hint="--fail-on-outlier/--threshold"
        )
    return value


def _save(figure: Any, path: Path) -> None:
    from launchbench.files import OutputError, os_reason

    try:
        figure.savefig(path)
    except OSError as err:
        raise OutputError(f"{path}: writing the figure: {os_reason(err)}") from None


@fleet.command("report", short_help="Score every node and GPU of a merged run against the fleet.")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--row",
    "rows",
    multiple=True,
    metavar="CASE/MODE",
    help="Also score this row (repeatable; SCENARIO/CASE/MODE where scenarios share case ids).",
)
@click.option("--metric", default="wall_us_per_launch", show_default=True, help="Metric of the --row rows.")
@click.option(
    "--threshold",
    metavar="N%",
    help="How far above the fleet median a node's row is an outlier (default 10%).",
)
@click.option(
    "--fail-on-outlier",
    "fail_on",
    metavar="N%",
    help="Exit 1 when a node is an outlier at N% (a fleet health gate).",
)
@click.option(
    "--db", help="History database: score each node against its own earlier runs (same host and GPU)."
)
@out_dir_option("Where fleet.csv and fleet.png go (default: RUN_DIR/fleet).")
@quiet_option("Print only the outliers.")
@handle_errors
def report(run_dir: Path, rows: tuple[str, ...], metric: str, threshold: str | None, fail_on: str | None,
           db: str | None, out_dir: Path | None, quiet: bool) -> None:  # fmt: skip
    """Score every node and GPU of a merged run against the fleet's median and its own history.

    Key rows: the eager empty launch, the graph per node and the cudaGraphLaunch CPU time (from the
    run's chain of empty kernels), and every --row. A node is an outlier on a row when its median is more
    than the threshold above the fleet's median and its 95% interval lies above the fleet median; each
    outlier is named with the environment entries it differs in (driver, CPU model, governor, NUMA node,
    kernel). Writes fleet.csv and fleet.png (a strip plot per row, outliers labelled).

    Exit 0 when written, 1 with --fail-on-outlier when a node is an outlier, 2 on a usage or input error."""
    from launchbench.fleet.render import figure_fleet, fleet_frame, fleet_table, outlier_line
    from launchbench.fleet.score import DEFAULT_THRESHOLD, score_fleet
    from launchbench.report.terminal import literal, make_console
    from launchbench.results.metrics import METRIC_BY_NAME
    from launchbench.results.store import atomic_write_text, load_run

    if metric not in METRIC_BY_NAME:
        raise click.BadParameter(f"{metric!r}: one of {', '.join(METRIC_BY_NAME)}", param_hint="--metric")
    limit = _threshold(fail_on) or _threshold(threshold) or DEFAULT_THRESHOLD
    run = load_run(run_dir)
    scored = score_fleet(run, threshold=limit, extra=rows, metric=metric)
    if db is not None:
        from launchbench.fleet.past import with_history
        from launchbench.history.db import HistoryDB

        with HistoryDB(db) as opened:
            scored = with_history(scored, run, opened)
    folder = out_dir or Path(run_dir) / "fleet"
    atomic_write_text(folder / "fleet.csv", fleet_frame(scored).to_csv(index=False))
    title = f"{', '.join(s.name for s in run.scenarios)}: {scored.members} node GPUs"
    _save(figure_fleet(scored, title), folder / "fleet.png")
    console = make_console()
    quiet = _quiet(quiet)
    if not quiet:
        console.print(fleet_table(scored))
        console.print(f"fleet.csv and fleet.png in {literal(str(folder))}")
    for outlier in scored.outliers:
        console.print(f"outlier: {outlier_line(outlier)}", markup=False)
    if not scored.outliers and not quiet:
        console.print(f"no outlier at +{limit:.0%}")
    sys.exit(EXIT_FAIL if fail_on is not None and scored.outliers else EXIT_OK)


command = fleet
