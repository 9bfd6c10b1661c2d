"""run: measure scenario files (parse, call run.runner, print, map the outcome to an exit code)."""

from __future__ import annotations

import shlex
import signal
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from launchbench.cli.common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    MeasureArgs,
    backend_option,
    device_option,
    handle_errors,
    quiet_option,
    run_dir_options,
    short_help,
    stack,
    terminate_as_interrupt,
    usage_errors,
    warn_unused_axes,
)
from launchbench.cli.history import ingest_after_run, ingest_options, wants_history
from launchbench.errors import LaunchbenchError
from launchbench.run.overrides import OverridesError, default, measure_overrides, quick_help

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from launchbench.results.metadata import Overrides
    from launchbench.results.schema import RunRecord
    from launchbench.run.executor import Executor
    from launchbench.run.resume import RunSettings
    from launchbench.run.runner import Plan, RunOptions

# The measurement settings the command line overrides: option → (type, help), the defaults read from the
# library (MeasureSettings). Each value is held to the scenario file's rules (run.overrides).
MEASURE_OVERRIDES: dict[str, tuple[type, str]] = {
    "--target-noise": (
        float,
        f"Stop when the median's 95% CI is within this fraction, in (0, 1] (default {default('target_noise'):g}).",
    ),
    "--max-time": (
        float,
        f"Time budget per case in seconds, in (0, 86400] (default {default('max_time'):g}).",
    ),
    "--min-samples": (
        int,
        f"Fewest samples per mode, 3 to the file's max_samples (default {default('min_samples'):g}).",
    ),
    "--passes": (
        int,
        "Passes over all cases, 1 to 100; each in a fresh worker process; each case's budget is split among "
        f"them (default {default('passes'):g}).",
    ),
}


@dataclass(frozen=True)
class RunArgs(MeasureArgs):
    """What the run command was given, as click parsed it."""

    scenarios: tuple[str, ...]
    out_dir: Path | None
    results_root: Path
    device: int
    devices_spec: str | None
    shard_spec: str | None
    backend: str | None
    passes: int | None
    max_cases: int | None
    resume_dir: Path | None
    allow_changed_scenario: bool
    no_isolate: bool
    check: bool
    plot: bool
    quiet: bool
    history: bool | None
    db: str | None

    def overrides(self) -> Overrides:
        """The measurement settings given, held to the file's rules (a usage error naming the option)."""
        with usage_errors(OverridesError):
            return measure_overrides({**self.given(), "passes": self.passes}, self.preset)


@click.command("run", short_help=short_help("run"))
@click.argument("scenarios", nargs=-1, type=click.Path(dir_okay=False))
@run_dir_options()
@device_option()
@click.option(
    "--devices",
    "devices_spec",
    metavar="all|N,N,...",
    help="Measure on these GPUs at once (all: every one CUDA shows), one runner per GPU, its workers pinned to the GPU's NUMA node; one run directory with a device column (each GPU's own run under devices/).",
)
@click.option(
    "--shard",
    "shard_spec",
    metavar="K/N",
    help="Measure shard K of N (K from 0): the cases whose index in the plan leaves K modulo N; `launchbench merge` joins the shards.",
)
@backend_option()
@stack(*(click.option(name, type=kind, help=text) for name, (kind, text) in MEASURE_OVERRIDES.items()))
@click.option("--quick", is_flag=True, help=quick_help())
@click.option(
    "--max-cases", type=click.IntRange(min=1), help="Allow sweeps with more cases than the file's max_cases."
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Finish an interrupted run with its own scenario files and settings: measure only its missing case-passes (refused when a file is not the run's or changed since, or an option given disagrees with the run's).",
)
@click.option(
    "--allow-changed-scenario",
    is_flag=True,
    help="With --resume: resume even though a scenario file changed since the run started.",
)
@click.option("--no-isolate", is_flag=True, help="Run cases in this process instead of a worker process.")
@click.option(
    "--check",
    "check",
    is_flag=True,
    help="Check the scenarios' expectations afterwards (exit 1 if one fails).",
)
@click.option("--plot", "plot", is_flag=True, help="Write the plots into <run dir>/plots afterwards.")
@quiet_option("Print only the summary table and errors.")
@ingest_options("the finished run")
@handle_errors
def run(**given: Any) -> None:
    """Measure scenario files: every case eagerly and as a CUDA Graph.

    Each pass over the cases runs in a fresh worker process; each case and pass is appended to the run's
    journal as it ends, results.csv as passes end (at most every 5 s) and at the end, results.json at
    the end, so an interrupted run keeps what it measured (finish it with --resume).

    Exit 0 when every case was measured, 1 when a case failed or was measured in a disturbed state (the
    worker's reference moved beyond its bound; or an expectation failed, with --check), 2 on a usage or
    input error (bad scenario, no usable GPU), 130 when interrupted.
    """
    args = RunArgs(**given)
    _refuse_device_with_devices(args)
    sys.exit(_run(args))


def _refuse_device_with_devices(args: RunArgs) -> None:
    """--devices names the GPUs itself: a --device given beside it would be ignored, so it is refused."""
    source = click.get_current_context().get_parameter_source("device")
    if args.devices_spec is not None and source not in (None, ParameterSource.DEFAULT):
        raise LaunchbenchError(
            f"--device {args.device} with --devices {args.devices_spec}: --devices names the GPUs to "
            "measure on; leave --device out"
        )


def _run(args: RunArgs) -> int:
    """Plan, measure, report; the exit code."""
    if not args.no_isolate:  # the workers' fork server imports what they need while the command does
        from launchbench.run.worker_start import worker_context

        worker_context()
    from launchbench.run import runner
    from launchbench.run.resume import RunSettings

    settings = RunSettings(args.overrides(), not args.no_isolate, args.device, args.max_cases)
    resume = None
    if args.resume_dir is not None:
        resume, settings, args = _resuming(args, settings)
    the_plan = _sharded(
        _planned(
            args.scenarios, args.out_dir, args.results_root, settings, resume, args.allow_changed_scenario
        ),
        args.shard_spec,
    )
    claimed = args.out_dir is None  # a default directory: claimed now, given back if nothing went in
    run_dir = args.out_dir or runner.default_run_dir(args.results_root, the_plan.scenarios)
    options = _options(args, settings)
    # the first worker starts its backend while the tables and the console (pandas, SciPy, rich) are
    # imported, only once the scenarios are known to be good
    executor = runner.early_executor(options) if args.devices_spec is None else None
    try:
        from launchbench.report.run_files import KeptTable
        from launchbench.report.terminal import make_console

        console = make_console()
        tables = KeptTable()
        options = replace(options, write_tables=tables)
        record = _measured(args, the_plan, run_dir, options, console, resume, claimed, executor)
    finally:
        if executor is not None:
            executor.close()  # the run closes it; here for an interruption before the run began
    return _outcome(args, record, run_dir, console, tables.table_of(record))


def _resuming(args: RunArgs, settings: RunSettings) -> tuple[RunRecord, RunSettings, RunArgs]:
    """run --resume: the run, its recorded settings, and the arguments with its files, shard and folder."""
    from launchbench.cli.resume import recorded_files, resumed

    assert args.resume_dir is not None
    if args.devices_spec is not None:
        raise click.UsageError("--resume with --devices: resume each device's run (RUN/devices/N) instead")
    resume, settings = resumed(args.resume_dir, args.out_dir, settings)
    scenarios = args.scenarios or recorded_files(resume, args.resume_dir)
    recorded = resume.settings.shard
    if args.shard_spec is not None and recorded is not None and args.shard_spec.strip() != recorded:
        raise click.UsageError(
            f"--resume {args.resume_dir} measured shard {recorded}; --shard {args.shard_spec} differs"
        )
    shard = args.shard_spec or recorded
    return resume, settings, replace(args, scenarios=scenarios, shard_spec=shard, out_dir=args.resume_dir)


def _options(args: RunArgs, settings: RunSettings) -> RunOptions:
    """The run's options, the tables' writer left out (``_run`` adds it once it has imported it)."""
    from launchbench.run import runner
    from launchbench.run.worker import load_factory

    options = runner.RunOptions(
        device=settings.device,
        overrides=settings.overrides,
        isolate=settings.isolate,
        shard=args.shard_spec,
    )
    if args.backend:  # else RunOptions' default, the CuPy backend
        options = replace(options, backend_factory=load_factory(args.backend))
    return options


def _measured(
    args: RunArgs,
    the_plan: Plan,
    run_dir: Path,
    options: RunOptions,
    console: Console,
    resume: RunRecord | None,
    claimed: bool,
    executor: Executor | None = None,
) -> RunRecord:
    """The plan measured (on one device, or on each of --devices; ``executor``: runner.early_executor's,
    for one device); interrupted: one line saying how to finish, exit 130. A claimed folder that holds
    nothing is given back."""
    from launchbench.report.console import ConsoleEvents, Verbosity
    from launchbench.results.store import release_if_empty
    from launchbench.run import runner

    events = ConsoleEvents(console, Verbosity.QUIET if args.quiet else Verbosity.NORMAL)
    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    try:
        if args.devices_spec is not None:
            return _run_devices(the_plan, run_dir, options, args.devices_spec, console, args.quiet)
        return runner.run(the_plan, run_dir, options, events, resume=resume, argv=sys.argv, executor=executor)
    except KeyboardInterrupt:
        events.close()
        from launchbench.report.terminal import literal

        console.print(  # one line, never wrapped: the command is copied from it
            f"[yellow]interrupted[/]: completed cases are saved in {literal(str(run_dir))}; finish with "
            f"{literal(_finish_hint(run_dir, args.devices_spec))}",
            soft_wrap=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    finally:
        events.close()
        signal.signal(signal.SIGTERM, previous)
        if claimed:
            release_if_empty(run_dir)


def _outcome(
    args: RunArgs, record: RunRecord, run_dir: Path, console: Console, written: pd.DataFrame | None
) -> int:
    """The summary, the input errors, --check, --plot and --history; the exit code. ``written``: the
    run's results table as its end wrote it (None where none was written for this record)."""
    from launchbench.analysis.table import run_table
    from launchbench.report.console import print_summary
    from launchbench.report.terminal import literal

    frame = written
    if frame is None and (args.devices_spec is None or args.check):
        frame = run_table(record)  # built once for both
    if args.devices_spec is None:
        print_summary(console, record, run_dir, frame)
    else:
        console.print(f"results: {literal(str(run_dir))}")
    failed = any(c.error and c.error_kind != "resources" for c in record.cases)
    code = EXIT_FAIL if failed or any(c.disturbed_passes for c in record.cases) else EXIT_OK
    input_errors = [c for c in record.cases if c.error_kind == "input"]
    for case in input_errors:
        click.echo(f"launchbench: error: {case.error}", err=True)
    if input_errors:
        code = EXIT_USAGE
    if args.check:
        code = max(code, _check_expectations(record, console, frame))
    if args.plot:
        _write_plots(record, run_dir, console)
    if wants_history(args.history, args.db):
        parts = sorted((run_dir / "devices").iterdir()) if args.devices_spec is not None else [run_dir]
        code = max(code, ingest_after_run(args.db, *parts))  # each device's own run: one measurement per case
    return code


def _planned(
    scenarios: tuple[str, ...],
    out_dir: Path | None,
    results_root: Path,
    settings: RunSettings,
    resume: RunRecord | None,
    allow_changed: bool,
) -> Plan:
    """The run's plan, its output folder checked; a resumed run's files held to the ones it recorded."""
    from launchbench.analysis.expectations import check_plan_expectations
    from launchbench.files import check_output_dir
    from launchbench.run import runner
    from launchbench.run.resume import check_scenarios

    if not scenarios:
        raise click.UsageError("give at least one SCENARIO file (or --resume DIR)")
    if out_dir is not None and resume is None:
        check_output_dir(out_dir, "-d")
    elif out_dir is None:
        check_output_dir(results_root, "--results-root")
    the_plan = runner.plan(scenarios, settings.overrides, settings.max_cases)
    warn_unused_axes(the_plan, settings.max_cases)
    check_plan_expectations(the_plan.files, the_plan.cases)
    _check_requirements(the_plan)
    if resume is not None and out_dir is not None:
        for warning in check_scenarios(the_plan.scenarios, resume, out_dir, allow_changed):
            click.echo(f"launchbench: warning: {warning}", err=True)
    return the_plan


def _check_requirements(the_plan: Any) -> None:
    """Refuse, before any worker starts, a scenario whose steps need a module that is not installed."""
    from launchbench.kinds.registry import missing_requirement

    for case in the_plan.cases:
        missing = missing_requirement(case.steps)
        if missing is not None:
            kind, module = missing
            raise LaunchbenchError(
                f"{case.source or case.scenario}: reading it: its {kind} steps need {module}, which is not "
                f"installed here (pip install 'launchbench[{module}]')"
            )


def _finish_hint(run_dir: Path, devices_spec: str | None) -> str:
    """The command (or commands, for a run on several devices) that finish an interrupted run."""
    if devices_spec is None:
        return f"`launchbench run --resume {shlex.quote(str(run_dir))}`"
    devices = shlex.quote(str(run_dir / "devices"))
    return (
        f"`launchbench run --resume {devices}/N --device N` for each device N, then "
        f"`launchbench merge {devices}/* -d DIR`"
    )


def _sharded(the_plan: Any, shard_spec: str | None) -> Any:
    """The plan's shard K/N (the whole plan without --shard); a shard that holds no case is refused."""
    from launchbench.scenario.shard import Shard

    if shard_spec is None:
        return the_plan
    shard = Shard.parse(shard_spec)
    cases = shard.select(the_plan.cases)
    if not cases:
        raise LaunchbenchError(
            f"--shard {shard}: holds no case; the scenarios hold {len(the_plan.cases)}, so N must be at most that"
        )
    return replace(the_plan, cases=cases)


def _run_devices(the_plan: Any, run_dir: Path, options: Any, spec: str, console: Any, quiet: bool) -> Any:
    """run --devices: one runner per GPU at once; a line per finished case, a summary per device."""
    from launchbench.report.console import Verbosity
    from launchbench.report.devices import DeviceLines, print_device_summary
    from launchbench.run.devices import parse_devices, probe, resolve_devices, run_devices

    if not options.isolate:
        raise click.UsageError("--devices runs a worker process per GPU; drop --no-isolate")
    devices = resolve_devices(parse_devices(spec), probe(options.backend_factory, 0))
    lines = DeviceLines(console, Verbosity.QUIET if quiet else Verbosity.NORMAL)
    record, parts = run_devices(the_plan, run_dir, options, devices, lines.for_device, argv=sys.argv)
    print_device_summary(console, record, {p.device: p.cpus for p in parts})
    return record


def _check_expectations(record: Any, console: Console, table: pd.DataFrame | None = None) -> int:
    """`run --check`: the scenarios' expectations, each scoped to its own scenario (gate owns the rules),
    shown as `launchbench check` shows them (``table``: the run's results table, where it is made)."""
    from launchbench.analysis import gate
    from launchbench.report.compare_console import render_checks
    from launchbench.report.terminal import literal

    try:
        report = gate.check_against_scenarios(record, table=table)
    except gate.NoExpectationsError as err:
        console.print(f"[yellow]note:[/] nothing to check: {literal(str(err))}")
        return EXIT_OK
    render_checks(console, report)
    return EXIT_FAIL if not report.passed else EXIT_OK


def _write_plots(record: Any, run_dir: Path, console: Console) -> None:
    from launchbench.forked import usable_cpus
    from launchbench.report.plots import draw_plots
    from launchbench.report.terminal import literal

    written = draw_plots([record], run_dir / "plots", jobs=usable_cpus())
    for path in written.paths:
        console.print(f"plot: {literal(str(path))}")
    for skipped in written.skipped:
        console.print(f"plot: not writing {literal(str(skipped.path))}: {literal(skipped.reason)}")


command = run
