"""floor: the launch path measured layer by layer, from the driver floor up."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchbench.cli.common import device_option, handle_errors, quiet_option, run_dir_options, short_help
from launchbench.errors import LaunchbenchError
from launchbench.scenario.floor import LAYERS, PROCESS_LAYOUTS

if TYPE_CHECKING:
    from launchbench.results.schema import RunRecord, ScenarioInfo
    from launchbench.scenario.core import MeasureSettings
    from launchbench.scenario.floor import Floor


def _spec(
    scenario: Path | None, layers: tuple[str, ...], max_time: float | None, processes: str | None
) -> tuple[Floor, MeasureSettings, ScenarioInfo]:
    """The floor block (the scenario's, or the defaults), the scenario it belongs to and its measure
    settings, with the command line's layers, budget and process layout applied."""
    from pydantic import ValidationError

    from launchbench.results.schema import ScenarioInfo
    from launchbench.run.floor import built_in_scenario
    from launchbench.scenario.core import MeasureSettings
    from launchbench.scenario.floor import Floor
    from launchbench.scenario.load import load_scenario_file

    info: ScenarioInfo | None = None
    if scenario is None:
        spec, measure = Floor(), MeasureSettings()
    else:
        loaded = load_scenario_file(scenario)
        if loaded.scenario.floor is None:
            raise LaunchbenchError(f"{scenario}: reading the scenario: it has no 'floor:' block to measure")
        spec, measure = loaded.scenario.floor, loaded.scenario.measure
        info = ScenarioInfo(
            name=loaded.scenario.name,
            description=loaded.scenario.description.strip(),
            file=str(scenario),
            sha256=loaded.sha256,
        )
    given = (("layers", list(layers)), ("max_time", max_time), ("processes", processes))
    update = {key: value for key, value in given if value}
    try:
        spec = Floor.model_validate({**spec.model_dump(), **update})
    except ValidationError as err:
        raise click.UsageError(str(err.errors(include_url=False)[0]["msg"])) from None
    return spec, measure, info or built_in_scenario(spec)


@click.command("floor", short_help=short_help("floor"))
@click.argument("scenario", required=False, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@run_dir_options()
@device_option()
@click.option(
    "--layer",
    "layers",
    multiple=True,
    type=click.Choice(LAYERS),
    help="Measure only this layer (repeatable).",
)
@click.option(
    "--max-time",
    type=click.FloatRange(min=0, min_open=True),
    help="Time budget of all layers together, seconds.",
)
@click.option(
    "--processes",
    type=click.Choice(PROCESS_LAYOUTS),
    help="layer: each layer in a fresh process of its own (the default); shared: every layer but torch "
    "in this process, interleaved in rounds, so the steps between layers can be paired round by round.",
)
@quiet_option("Print only errors and where the run was written.")
@handle_errors
def floor(
    scenario: Path | None,
    out_dir: Path | None,
    results_root: Path,
    device: int,
    layers: tuple[str, ...],
    max_time: float | None,
    processes: str | None,
    quiet: bool,
) -> None:
    """Measure the launch path layer by layer: C over the driver API, cuda-bindings, CuPy, torch.

    Each layer (SCENARIO's 'floor:' block, or all of them) is timed eagerly and as a CUDA Graph, at
    0, 4 and 16 kernel arguments where it launches the empty kernel itself. Each layer is measured in
    a fresh process of its own, its modes and argument counts interleaved in rounds, one layer after
    another (--processes shared: every layer but torch interleaved in rounds in this process, torch in
    a fresh process of its own). A layer that cannot run here (no C compiler, no torch) is recorded as
    skipped with its reason. The run directory gets results.json and results.csv (so compare, ab,
    history and plot read it), floor.md (each layer's cost above the C floor and above its parent on
    the call path, what a graph saves, each paired round by round with its 95% CI where the two were
    sampled in one process; the host facts) and floor.png (the stacked bars).

    Exit 0 when the floor was measured, 2 on a usage or input error or when there is no usable GPU.
    """
    from launchbench.measure.clock import SystemClock
    from launchbench.results.store import release_if_empty
    from launchbench.run.floor import FloorRequest, run_floor

    spec, measure, info = _spec(scenario, layers, max_time, processes)
    run_dir = _run_dir(out_dir, results_root, info)
    try:
        record = run_floor(FloorRequest(spec, info, measure, device), run_dir, SystemClock())
    except LaunchbenchError:
        release_if_empty(run_dir)
        raise
    _report(record, run_dir, quiet)


def _run_dir(out_dir: Path | None, results_root: Path, info: ScenarioInfo) -> Path:
    """The run directory, made now: ``out_dir`` (refused where it holds results) or a new one."""
    from launchbench.files import OutputError, check_output_dir, os_reason
    from launchbench.results.store import refuse_used_run_dir
    from launchbench.run.runner import default_run_dir

    if out_dir is None:
        return default_run_dir(results_root, [info])
    refuse_used_run_dir(out_dir)
    check_output_dir(out_dir, "-d")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(
            f"-d {out_dir}: cannot make the run directory (writing): {os_reason(err)}"
        ) from None
    return out_dir


def _report(record: RunRecord, run_dir: Path, quiet: bool) -> None:
    from launchbench.files import atomic_write_text
    from launchbench.report.floor import floor_report, render_markdown
    from launchbench.report.plots.floor import draw_floor_figure
    from launchbench.report.run_files import write_tables

    write_tables(run_dir, record)
    report = floor_report(record)
    text = render_markdown(report)
    atomic_write_text(run_dir / "floor.md", text, "the floor report")
    figure = draw_floor_figure(report, run_dir)
    if not quiet:
        click.echo(text)
        if figure is not None:
            click.echo(f"figure: {figure}")
    click.echo(f"results: {run_dir}")


command = floor
