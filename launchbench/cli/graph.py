"""graph: the picture of what was captured."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from launchbench.cli.common import (
    EXIT_OK,
    device_option,
    handle_errors,
    output_option,
    quiet_option,
    short_help,
)
from launchbench.errors import LaunchbenchError
from launchbench.files import atomic_write_text, check_output_file

if TYPE_CHECKING:
    from launchbench.backend.base import GraphDrawing
    from launchbench.scenario.core import Case


@click.command("graph", short_help=short_help("graph"))
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--case", "case_id", help="Case id (see `launchbench validate`); default: the first case.")
@output_option(
    "Output file; .dot, .svg or .png (replaced atomically if it exists; its folder must exist).",
    required=True,
)
@device_option()
@quiet_option("Print only errors.")
@handle_errors
def graph(scenario: str, case_id: str | None, output: Path, device: int, quiet: bool) -> None:
    """Capture one case and write its CUDA Graph as DOT (and SVG/PNG where Graphviz is installed).

    Every node is drawn with its kind (kernel with its name and launch shape, memcpy, memset, memory
    alloc/free with its bytes, event), parallel branches side by side, and a conditional WHILE node's
    body as a cluster the node points into (read through cuda-bindings; CuPy's own DOT without it).

    Exit 0 when the file is written, 2 on a usage or input error (no such case, no usable GPU, no
    Graphviz for .svg/.png).
    """
    suffix = output.suffix.lower()
    if suffix not in (".dot", ".svg", ".png"):
        raise LaunchbenchError(f"-o {output}: give a .dot, .svg or .png file")
    dot_path = output if suffix == ".dot" else output.with_suffix(".dot")
    check_output_file(output, "-o")
    check_output_file(dot_path, "-o")
    chosen = _chosen_case(scenario, case_id)
    drawing = _draw(chosen, device)
    atomic_write_text(dot_path, drawing.dot, "-o")
    if not quiet:
        click.echo(f"{chosen.scenario} {chosen.case_id}: graph written to {dot_path}")
        if drawing.summary is not None:
            click.echo(f"  {drawing.summary}")
    if suffix in (".svg", ".png"):
        _render(dot_path, output, suffix)
        if not quiet:
            click.echo(f"rendered with Graphviz: {output}")
    sys.exit(EXIT_OK)


def _chosen_case(scenario: str, case_id: str | None) -> Case:
    """The case ``case_id`` of the scenario (the first case without one), refused where it runs on
    several GPUs."""
    from launchbench.scenario.expand import expand_scenario

    cases = expand_scenario(scenario)
    chosen = next((c for c in cases if c.case_id == case_id), None) if case_id else cases[0]
    if chosen is None:
        known = ", ".join(c.case_id for c in cases[:20])
        raise LaunchbenchError(f"{scenario}: no case '{case_id}'; cases: {known}")
    if chosen.devices > 1:
        raise LaunchbenchError(
            f"{scenario}: case {chosen.case_id} runs on {chosen.devices} GPUs; `launchbench graph` draws one-GPU cases"
        )
    return chosen


def _draw(case: Case, device: int) -> GraphDrawing:
    """The case prepared on the CuPy backend and its captured graph drawn."""
    from launchbench.backend.base import DrawsGraph
    from launchbench.run.worker import cupy_backend

    prepared = cupy_backend(device).prepare(case)
    try:
        if not isinstance(prepared, DrawsGraph):
            raise LaunchbenchError(f"case {case.case_id}: this backend cannot draw its graphs")
        return prepared.draw_graph()
    finally:
        prepared.close()


def _render(dot_path: Path, output: Path, suffix: str) -> None:
    """``output`` (.svg or .png) rendered from ``dot_path`` by Graphviz."""
    if shutil.which("dot") is None:
        raise LaunchbenchError(
            f"Graphviz 'dot' is not installed; the DOT file is at {dot_path} (apt-get install graphviz)"
        )
    try:
        subprocess.run(
            ["dot", f"-T{suffix[1:]}", str(dot_path), "-o", str(output)],
            check=True,
            timeout=120,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as err:
        raise LaunchbenchError(
            f"Graphviz could not render {output} ({err}); the DOT file is at {dot_path}"
        ) from None


command = graph
