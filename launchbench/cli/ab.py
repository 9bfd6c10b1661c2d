"""ab command: two variants of the same scenarios measured interleaved on one GPU (or, with --devices,
on each of several GPUs at once: cli.ab_devices), then the paired comparison with compare's table,
formats, JUnit, step summary and exit codes.

Exit codes: 0 pass; 1 a regression under a --fail-on rule (or a failed case); 2 usage or input error;
130 interrupted.
"""

from __future__ import annotations

import dataclasses
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from launchbench.cli.common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    MeasureArgs,
    backend_option,
    handle_errors,
    out_dir_option,
    output_option,
    quiet_option,
    short_help,
    terminate_as_interrupt,
    usage_errors,
    warn_unused_axes,
)
from launchbench.cli.compare import FORMATS, comparison_options, usable_settings
from launchbench.cli.history import ingest_after_run, ingest_options, wants_history
from launchbench.run.overrides import (
    AB_ROUNDS,
    QUICK,
    OverridesError,
    ab_overrides,
    default,
    quick_help,
)

if TYPE_CHECKING:
    from launchbench.analysis.compare import CompareSettings, Comparison
    from launchbench.analysis.gate import GatePolicy, GateReport, GateRule, GateScope
    from launchbench.results.metadata import Overrides
    from launchbench.results.schema import RunRecord
    from launchbench.run.ab import Side, Variant
    from launchbench.run.runner import RunOptions

T = TypeVar("T")


def judge(
    a: RunRecord, b: RunRecord, labels: tuple[str, str], settings: CompareSettings, policy: GatePolicy | None
) -> tuple[Comparison, GateReport | None]:
    """The paired comparison of both sides and its gate (None without rules; as in compare, a gate that
    checks nothing fails)."""
    from launchbench.analysis.compare import compare_paired
    from launchbench.analysis.gate import ComparedRuns, gate

    comparison = compare_paired(a, b, settings, a_label=labels[0], b_label=labels[1])
    if policy is None:
        return comparison, None
    return comparison, gate(ComparedRuns(comparison, a, b), policy)


def said_failed_cases(*records: RunRecord, where: str = "") -> bool:
    """Whether a case failed on a side (resources refusals aside), each failure said on stderr."""
    failed = [c for r in records for c in r.cases if c.error and c.error_kind != "resources"]
    for case in failed:
        click.echo(f"launchbench: error: {where}{case.scenario}/{case.case_id}: {case.error}", err=True)
    return bool(failed)


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
@click.option(
    "--devices",
    "devices_spec",
    metavar="all|N,N,...",
    help="One ab per GPU at once (all: every one CUDA shows), each GPU's sides pinned to a CPU of its own on its NUMA node (see --cpu), into OUT/devices/N/{a,b}; a comparison and gate per GPU, the gate failing when any GPU's fails; OUT/a and OUT/b merge the GPUs (a device column).",
)
@backend_option()
@click.option(
    "--passes",
    type=click.IntRange(min=2, max=100),
    help=f"Rounds: passes of each side, interleaved; a case's time budget is shared among them (default {AB_ROUNDS}; --quick: {QUICK['passes']}).",
)
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    help=f"Time budget per case and side in seconds (default {default('max_time'):g}).",
)
@click.option(
    "--target-noise",
    type=click.FloatRange(min=0, min_open=True, max=1),
    help="Noise target of each side's sampling.",
)
@click.option("--min-samples", type=click.IntRange(min=3), help="Fewest samples per mode.")
@click.option("--quick", is_flag=True, help=quick_help("rounds"))
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
    help="CPU to pin both sides' workers to: a number, auto (the highest this process may use) or none. With --devices: auto (per GPU the highest free CPU of its NUMA node, no CPU shared), none, or one CPU per GPU (N,N,... in the order of the devices).",
)
@quiet_option("No progress lines.")
@ingest_options("both sides (OUT/a, OUT/b) once they are compared, also when the gate fails,")
@handle_errors
def ab(**given: Any) -> None:
    """Measure two variants A (base) and B (change) of the same SCENARIOS interleaved on one GPU.

    Pass by pass and case by case, each variant in its own worker process (its interpreter, paths and
    environment; this launchbench's code); both sides sample a case in turns of a few milliseconds
    (A B B A ...), so the host's speed state cancels in each round's B/A ratio. Each side is an
    ordinary run directory (OUT/a, OUT/b). Output, JUnit, step summary and exit codes as in compare.
    With --history both sides go into the history database, each marked with the invocation's id and
    its side (history list --ab).

    A scenario's floor: block is measured paired too: in every round each side measures all its
    layers in one floor worker of its own (each layer in a fresh process that worker starts, unless
    the block says processes: shared), after the round's cases (docs/ab.md).

    With --devices, one such ab per GPU at the same time, into OUT/devices/N/a and OUT/devices/N/b,
    each GPU's sides pinned to a CPU of its own (--cpu); a comparison and gate per GPU, shown one after
    the other (JUnit: a testsuite per GPU); OUT/a and OUT/b merge the GPUs' sides (a device column).

    Exit 0 when no --fail-on rule finds a regression and every case was measured, 1 when a rule finds
    one or a case failed (with --devices: on any GPU), 2 on a usage or input error, 130 when
    interrupted.
    """
    sys.exit(_ab(AbArgs(**given)))


@dataclass(frozen=True)
class AbArgs(MeasureArgs):
    """What the ab command was given, as click parsed it."""

    scenarios: tuple[str, ...]
    a_spec: str
    b_spec: str
    out_dir: Path | None
    results_root: Path
    device: int
    devices_spec: str | None
    backend: str | None
    passes: int | None
    max_cases: int | None
    metrics: tuple[str, ...]
    thresholds: list[tuple[str | None, float]]
    alpha: float
    rules: list[GateRule]
    allow_missing: bool
    allow_empty: bool
    allow_disturbed: bool
    allow_blind: bool
    gate_rows: GateScope
    fmt: str
    output: Path | None
    junit: Path | None
    cpu: str
    quiet: bool
    history: bool | None
    db: str | None

    def overrides(self) -> Overrides:
        """The measurement settings given, held to the file's rules; the passes are ab's rounds."""
        with usage_errors(OverridesError):
            return ab_overrides(self.given(), self.passes, self.preset)

    def gate(self) -> GatePolicy | None:
        """ab's gate: its --fail-on rules and --allow-* choices (None without rules)."""
        from launchbench.analysis.coverage import CoveragePolicy
        from launchbench.analysis.gate import GatePolicy

        coverage = CoveragePolicy(
            self.allow_empty,
            self.allow_missing,
            allow_interrupted=False,
            allow_disturbed=self.allow_disturbed,
        )
        return (
            GatePolicy(tuple(self.rules), self.gate_rows, self.allow_blind, coverage) if self.rules else None
        )

    def output_to(self, root: Path) -> AbOutput:
        return AbOutput(
            root, self.out_dir is None, self.fmt, self.output, self.junit, self.quiet, self.history, self.db
        )


def _ab(args: AbArgs) -> int:
    """Plan both sides, measure them (on one device or on each of --devices), compare; the exit code."""
    from launchbench.cli.common import check_outputs
    from launchbench.run.ab import check_interpreter, chosen_cpus, parse_variant
    from launchbench.run.devices import parse_devices

    check_outputs(
        [("-o", args.output), ("--junit", args.junit)], inputs=list(args.scenarios)
    )  # before measuring
    settings = usable_settings(args.metrics, args.thresholds, args.alpha, args.rules)
    listed = parse_devices(args.devices_spec) if args.devices_spec is not None else ()
    cpus = chosen_cpus(args.cpu) if args.devices_spec is None else ()  # with --devices: once they are known
    variants = (parse_variant(args.a_spec), parse_variant(args.b_spec))
    for variant in variants:
        check_interpreter(variant)
    overrides = args.overrides()
    sides = _sides(args, variants, overrides)
    options = _options(args, overrides)
    out = args.output_to(sides[0].run_dir.parent)
    if args.devices_spec is not None:
        from launchbench.cli.ab_devices import ab_on_devices

        return ab_on_devices(listed, args.cpu, sides, options, settings, args.gate(), out)
    return _ab_on_one_device(sides, options, cpus, settings, args.gate(), out)


def _sides(args: AbArgs, variants: tuple[Variant, Variant], overrides: Overrides) -> tuple[Side, Side]:
    """Each variant's plan (its own scenario files where it names some), in OUT/a and OUT/b."""
    from launchbench.run import runner
    from launchbench.run.ab import Side

    plans = tuple(runner.plan(v.scenarios or args.scenarios, overrides, args.max_cases) for v in variants)
    for the_plan in plans[: 1 if variants[0].scenarios == variants[1].scenarios else 2]:
        warn_unused_axes(the_plan, args.max_cases)
    root = args.out_dir or runner.default_run_dir(
        args.results_root, [s.model_copy(update={"name": "ab-" + s.name}) for s in plans[0].scenarios]
    )
    return Side("A", variants[0], plans[0], root / "a"), Side("B", variants[1], plans[1], root / "b")


def _options(args: AbArgs, overrides: Overrides) -> RunOptions:
    from launchbench.report.run_files import write_tables
    from launchbench.run import runner
    from launchbench.run.worker import load_factory

    options = runner.RunOptions(
        device=args.device, overrides=overrides, isolate=True, write_tables=write_tables
    )
    if args.backend:  # else RunOptions' default, the CuPy backend
        options = dataclasses.replace(options, backend_factory=load_factory(args.backend))
    return options


@dataclass(frozen=True)
class AbOutput:
    """Where ab writes: its folder (``claimed``: a default one, given back if nothing went in), the
    format and files of the comparison, the console's quietness and the history database."""

    root: Path
    claimed: bool
    fmt: str
    output: Path | None
    junit: Path | None
    quiet: bool
    history: bool | None
    db: str | None

    @property
    def data_on_stdout(self) -> bool:
        """Whether stdout carries the data (a format other than the table, no -o): progress to stderr."""
        return self.fmt != "table" and not self.output


def measured(
    measure: Callable[[], T], console: Any, close: Callable[[], None], out: AbOutput, what: str
) -> T:
    """``measure()`` with SIGTERM as an interrupt; interrupted: one line saying where ``what`` is, exit
    130. A claimed folder that holds nothing is given back."""
    from launchbench.report.terminal import literal
    from launchbench.results.store import release_if_empty

    previous = signal.signal(signal.SIGTERM, terminate_as_interrupt)
    try:
        return measure()
    except KeyboardInterrupt:
        close()
        console.print(f"[yellow]interrupted[/]: {literal(what)}")
        sys.exit(EXIT_INTERRUPTED)
    finally:
        close()
        signal.signal(signal.SIGTERM, previous)
        if out.claimed:
            release_if_empty(out.root)  # a default directory claimed for a run that wrote nothing


def _ab_on_one_device(
    sides: tuple[Side, Side],
    options: RunOptions,
    cpus: tuple[int, ...],
    settings: CompareSettings,
    gate: GatePolicy | None,
    out: AbOutput,
) -> int:
    """One paired run, its comparison and gate written; the exit code."""
    from launchbench.cli.compare import emit_comparison
    from launchbench.report.console import ConsoleEvents, Verbosity
    from launchbench.report.markdown import comparison_markdown
    from launchbench.report.terminal import Stream, make_console
    from launchbench.run.ab import run_ab

    root = out.root
    console = make_console(stream=Stream.STDERR if out.data_on_stdout else Stream.STDOUT)
    events = ConsoleEvents(console, Verbosity.QUIET if out.quiet else Verbosity.NORMAL)
    where = f"what both sides measured is in {root}/a and {root}/b"
    a, b = measured(lambda: run_ab(sides, options, events, sys.argv, cpus), console, events.close, out, where)
    comparison, report = judge(a, b, (str(root / "a"), str(root / "b")), settings, gate)
    emit_comparison(comparison, report, out.fmt, out.output, out.junit)
    (root / "comparison.md").write_text(comparison_markdown(comparison, report), encoding="utf-8")
    failed = said_failed_cases(a, b)
    regressed = report is not None and not report.passed
    code = EXIT_FAIL if regressed or failed else EXIT_OK
    if wants_history(out.history, out.db):
        code = max(code, ingest_after_run(out.db, root / "a", root / "b", err=out.data_on_stdout))
    return code


command = ab
