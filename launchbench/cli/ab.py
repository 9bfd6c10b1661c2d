"""ab command: two variants of the same scenarios measured interleaved on one GPU, then the paired
comparison with compare's table, formats, JUnit, step summary and exit codes.

Exit codes: 0 pass; 1 a regression under a --fail-on rule (or a failed case); 2 usage or input error;
130 interrupted.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchbench.cli.common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    backend_option,
    handle_errors,
    out_dir_option,
    output_option,
    quiet_option,
    short_help,
)
from launchbench.cli.compare import FORMATS, _settings, comparison_options
from launchbench.cli.history import ingest_after_run, ingest_options, wants_history
from launchbench.cli.run import _overrides, _terminate_as_interrupt, warn_unused_axes

if TYPE_CHECKING:
    from launchbench.analysis.gate import GateRule, GateScope

# ab's default rounds: the interval over rounds narrows with their number, its t quantile with their df
AB_ROUNDS = 10

VARIANT_HELP = "comma-separated python=INTERPRETER, path=DIR (repeatable), env=NAME=VALUE (repeatable), scenario=FILE (repeatable)"


@click.command("ab", short_help=short_help("ab"))
@click.argument("scenarios", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--a",
    "a_spec",
    default="",
    metavar="VARIANT",
    help=f"Variant A, the base: {VARIANT_HELP}. Default: this interpreter.",
)
@click.option(
    "--b",
    "b_spec",
    default="",
    metavar="VARIANT",
    help="Variant B, the change: as --a. Default: this interpreter.",
)
@out_dir_option(
    "Directory for both run directories (a/, b/) and the comparison (default results/<timestamp>-ab-<scenario>)."
)
@click.option(
    "--results-root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Where the default directory goes.",
)
@click.option("--device", type=click.IntRange(min=0), default=0, show_default=True, help="CUDA device index.")
@backend_option()
@click.option(
    "--passes",
    type=click.IntRange(min=2, max=100),
    help=f"Rounds: passes of each side, interleaved; a case's time budget is shared among them (default {AB_ROUNDS}; --quick: 2).",
)
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    help="Time budget per case and side in seconds (default 4).",
)
@click.option(
    "--target-noise",
    type=click.FloatRange(min=0, min_open=True, max=1),
    help="Noise target of each side's sampling.",
)
@click.option("--min-samples", type=click.IntRange(min=3), help="Fewest samples per mode.")
@click.option("--quick", is_flag=True, help="Preset: 3% target, 1 s per case in 2 rounds, 5 samples minimum.")
@click.option(
    "--max-cases", type=click.IntRange(min=1), help="Allow sweeps with more cases than the file's max_cases."
)
@comparison_options("rounds")
@click.option(
    "--allow-missing", is_flag=True, help="Do not fail the gate when a row ok in A is missing or failed in B."
)
@click.option(
    "--allow-empty", is_flag=True, help="Do not fail the gate when it evaluated no check (a warning instead)."
)
@click.option(
    "--allow-disturbed",
    is_flag=True,
    help="Do not fail the gate on a gated row measured in a disturbed state on either side (a note instead).",
)
@click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True, help="Output format."
)
@output_option(old=())
@click.option(
    "--junit",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write JUnit XML: one testcase per row and metric.",
)
@click.option(
    "--cpu",
    "cpu",
    default="auto",
    show_default=True,
    metavar="N|auto|none",
    help="CPU to pin both sides' workers to: a number, auto (the highest this process may use) or none.",
)
@quiet_option("No progress lines.")
@ingest_options("both sides (OUT/a, OUT/b) once they are compared, also when the gate fails,")
@handle_errors
def ab(
    scenarios: tuple[str, ...],
    a_spec: str,
    b_spec: str,
    out_dir: Path | None,
    results_root: Path,
    device: int,
    backend: str | None,
    passes: int | None,
    max_time: float | None,
    target_noise: float | None,
    min_samples: int | None,
    quick: bool,
    max_cases: int | None,
    metrics: tuple[str, ...],
    thresholds: list[tuple[str | None, float]],
    alpha: float,
    rules: list[GateRule],
    allow_missing: bool,
    allow_empty: bool,
    allow_disturbed: bool,
    allow_blind: bool,
    fail_on_blind: bool,
    gate_rows: GateScope,
    fmt: str,
    output: Path | None,
    junit: Path | None,
    cpu: str,
    quiet: bool,
    history: bool | None,
    db: str | None,
) -> None:
    """Measure two variants A (base) and B (change) of the same SCENARIOS interleaved on one GPU.

    Pass by pass and case by case, each variant in its own worker process (its interpreter, paths and
    environment; this launchbench's code); both sides sample a case in turns of a few milliseconds
    (A B B A ...), so the host's speed state cancels in each round's B/A ratio. Each side is an
    ordinary run directory (OUT/a, OUT/b). Output, JUnit, step summary and exit codes as in compare.
    With --history both sides go into the history database, each marked with the invocation's id and
    its side (history list --ab).

    Exit 0 when no --fail-on rule finds a regression and every case was measured, 1 when a rule finds
    one or a case failed, 2 on a usage or input error, 130 when interrupted.
    """
    from launchbench.analysis.compare import CompareSettingsError, compare_paired
    from launchbench.analysis.coverage import CoveragePolicy, comparison_coverage
    from launchbench.analysis.gate import evaluate_rules
    from launchbench.cli.common import check_outputs
    from launchbench.cli.compare import emit_comparison
    from launchbench.report.console import ConsoleEvents, make_console
    from launchbench.report.run_files import write_tables
    from launchbench.results.store import release_if_empty
    from launchbench.run import runner
    from launchbench.run.ab import Side, check_interpreter, chosen_cpus, parse_variant, run_ab
    from launchbench.run.worker import load_factory

    check_outputs([("-o", output), ("--junit", junit)], inputs=list(scenarios))  # before any measuring
    try:
        settings = _settings(metrics, thresholds, alpha, rules)
    except CompareSettingsError as err:
        raise click.UsageError(str(err)) from None
    cpus = chosen_cpus(cpu)
    variants = (parse_variant(a_spec), parse_variant(b_spec))
    for variant in variants:
        check_interpreter(variant)
    overrides = _overrides(quick, target_noise, max_time, min_samples)
    if passes is not None or not quick:
        overrides["passes"] = passes or AB_ROUNDS
    plans = tuple(runner.plan(v.scenarios or scenarios, overrides, max_cases) for v in variants)
    for the_plan in plans[: 1 if variants[0].scenarios == variants[1].scenarios else 2]:
        warn_unused_axes(the_plan, max_cases)
    root = out_dir or runner.default_run_dir(
        results_root, [s.model_copy(update={"name": "ab-" + s.name}) for s in plans[0].scenarios]
    )
    sides = (Side("A", variants[0], plans[0], root / "a"), Side("B", variants[1], plans[1], root / "b"))
    options = runner.RunOptions(device=device, overrides=overrides, isolate=True, write_tables=write_tables)
    if backend:  # else RunOptions' default, the CuPy backend
        options = dataclasses.replace(options, backend_factory=load_factory(backend))
    console = make_console(stderr=fmt != "table" and not output)
    events = ConsoleEvents(console, quiet)
    previous = signal.signal(signal.SIGTERM, _terminate_as_interrupt)
    try:
        a, b = run_ab(sides, options, events, argv=sys.argv, cpus=cpus)
    except KeyboardInterrupt:
        events.close()
        console.print(f"[yellow]interrupted[/]: what both sides measured is in {root}/a and {root}/b")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        events.close()
        signal.signal(signal.SIGTERM, previous)
        if out_dir is None:
            release_if_empty(root)  # a default directory claimed for a run that wrote nothing
    comparison = compare_paired(a, b, settings, a_label=str(root / "a"), b_label=str(root / "b"))
    report = None
    if rules:  # as in compare: a gate that checks nothing fails
        policy = CoveragePolicy(
            allow_empty=allow_empty,
            allow_missing=allow_missing,
            allow_interrupted=False,
            allow_disturbed=allow_disturbed,
        )
        report = comparison_coverage(
            evaluate_rules(comparison, rules, not allow_missing, allow_blind, gate_rows),
            comparison,
            a,
            b,
            policy,
        )
    emit_comparison(comparison, report, fmt, output, junit)
    from launchbench.report.markdown import comparison_markdown

    (root / "comparison.md").write_text(comparison_markdown(comparison, report), encoding="utf-8")
    failed = [c for c in (*a.cases, *b.cases) if c.error and c.error_kind != "resources"]
    for case in failed:
        click.echo(f"launchbench: error: {case.scenario}/{case.case_id}: {case.error}", err=True)
    regressed = report is not None and not report.passed
    code = EXIT_FAIL if regressed or failed else EXIT_OK
    if wants_history(history, db):
        code = max(code, ingest_after_run(db, root / "a", root / "b", err=fmt != "table" and not output))
    sys.exit(code)


command = ab
