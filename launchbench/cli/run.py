"""run, validate and env commands."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from launchbench.cli.common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, handle_errors
from launchbench.errors import LaunchbenchError
from launchbench.scenario.expand import expand_scenario

QUICK = {"target_noise": 0.03, "latency_target_noise": 0.05, "max_time": 1.0, "min_samples": 5, "warmup_time": 0.05, "passes": 2}


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


def _overrides(quick: bool, target_noise: float | None, max_time: float | None, min_samples: int | None) -> dict[str, Any]:
    out: dict[str, Any] = dict(QUICK) if quick else {}
    if target_noise is not None:
        out["target_noise"] = target_noise
    if max_time is not None:
        out["max_time"] = max_time
    if min_samples is not None:
        out["min_samples"] = min_samples
    return out


def _terminate_as_interrupt(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt


@click.command()
@click.argument("scenarios", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), help="Run directory (default results/<timestamp>-<scenario>).")
@click.option("--results-root", type=click.Path(file_okay=False, path_type=Path), default=Path("results"), show_default=True, help="Where default run directories go.")
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index.")
@click.option("--target-noise", type=click.FloatRange(min=0, min_open=True, max=1), help="Stop when the median's 95% CI is within this fraction (default 0.01).")
@click.option("--max-time", type=click.FloatRange(min=0, min_open=True), help="Time budget per case in seconds (default 4).")
@click.option("--min-samples", type=click.IntRange(min=3), help="Fewest samples per mode (default 10).")
@click.option("--passes", type=click.IntRange(min=1, max=100), help="Passes over all cases; each in a fresh worker process; each case's budget is split among them (default 5).")
@click.option("--quick", is_flag=True, help="Preset: 3% target, 1 s per case in 2 passes, 5 samples minimum.")
@click.option("--max-cases", type=click.IntRange(min=1), help="Allow sweeps with more cases than the file's max_cases.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True, path_type=Path), help="Finish an interrupted run: measure only its missing cases.")
@click.option("--no-isolate", is_flag=True, help="Run cases in this process instead of a worker process.")
@click.option("--check", "check", is_flag=True, help="Check the scenarios' expectations afterwards (exit 1 if one fails).")
@click.option("--plot", "plot", is_flag=True, help="Write the plots into <run dir>/plots afterwards.")
@click.option("--quiet", "-q", is_flag=True, help="Only the summary table and errors.")
@handle_errors
def run(
    scenarios: tuple[str, ...],
    out: Path | None,
    results_root: Path,
    device: int,
    target_noise: float | None,
    max_time: float | None,
    min_samples: int | None,
    passes: int | None,
    quick: bool,
    max_cases: int | None,
    resume_dir: Path | None,
    no_isolate: bool,
    check: bool,
    plot: bool,
    quiet: bool,
) -> None:
    """Measure scenario files: every case eagerly and as a CUDA Graph, results.json after every case."""
    from launchbench.report.console import ConsoleEvents, print_summary
    from launchbench.results.store import load_run
    from launchbench.run import runner

    resume = None
    if resume_dir is not None:
        resume = load_run(resume_dir)
        if not scenarios:
            scenarios = tuple(s.file for s in resume.scenarios)
        out = resume_dir
    if not scenarios:
        raise click.UsageError("give at least one SCENARIO file (or --resume DIR)")
    overrides = _overrides(quick, target_noise, max_time, min_samples)
    if passes is not None:
        overrides["passes"] = passes
    the_plan = runner.plan(scenarios, overrides, max_cases)
    run_dir = out or runner.default_run_dir(results_root, the_plan.scenarios)
    from launchbench.report.run_files import write_tables

    options = runner.RunOptions(device=device, overrides=overrides, isolate=not no_isolate, write_tables=write_tables)
    console = Console(stderr=False)
    events = ConsoleEvents(console, quiet)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        record = runner.run(the_plan, run_dir, options, events, resume=resume, argv=sys.argv)
    except KeyboardInterrupt:
        events.close()
        console.print(f"[yellow]interrupted[/]: completed cases are saved in {run_dir}; finish with `launchbench run --resume {run_dir}`")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        events.close()
        signal.signal(signal.SIGTERM, previous)
    print_summary(console, record, run_dir)
    code = EXIT_FAIL if any(c.error and c.error_kind != "resources" for c in record.cases) else EXIT_OK
    input_errors = [c for c in record.cases if c.error_kind == "input"]
    for case in input_errors:
        click.echo(f"launchbench: error: {case.error}", err=True)
    if input_errors:
        code = EXIT_USAGE
    if check:
        code = max(code, _check_expectations(record, console))
    if plot:
        _write_plots(record, run_dir, console)
    sys.exit(code)


def _check_expectations(record: Any, console: Console) -> int:
    """`run --check`: the scenarios' expectations, each scoped to its own scenario (gate owns the rules),
    shown as `launchbench check` shows them."""
    from launchbench.analysis import gate
    from launchbench.cli.compare import render_checks

    try:
        report = gate.check_against_scenarios(record)
    except gate.NoExpectationsError as err:
        console.print(f"[yellow]note:[/] nothing to check: {err}")
        return EXIT_OK
    render_checks(console, report)
    return EXIT_FAIL if not report.passed else EXIT_OK


def _write_plots(record: Any, run_dir: Path, console: Console) -> None:
    from launchbench.report.plots import write_all_plots

    for path in write_all_plots([record], run_dir / "plots"):
        console.print(f"plot: {path}")


@click.command()
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the environment as JSON.")
@handle_errors
def env(device: int, as_json: bool) -> None:
    """What GPU, driver, CUDA, CuPy and host launchbench sees (exit 2 without a usable GPU)."""
    from launchbench.backend.gpu_probe import collect_environment, require_gpu
    from launchbench.results.environment import host_environment

    try:
        require_gpu(device)
        info = collect_environment(device)
        problem = None
    except LaunchbenchError as err:
        info = host_environment()
        problem = str(err)
    if as_json:
        click.echo(json.dumps({**info, "gpu_problem": problem}, indent=1, default=str))
    else:
        for key, value in info.items():
            if isinstance(value, dict):
                value = ", ".join(f"{k}={v}" for k, v in value.items())
            click.echo(f"{key:>14}: {value}")
        if problem:
            click.echo(f"{'gpu':>14}: none — {problem}")
    sys.exit(EXIT_USAGE if problem else EXIT_OK)


COMMANDS: list[click.Command] = [run, validate, env]
