"""A run's figures drawn at once, each in a process of its own.

The figures of one run share nothing once its table is made, and matplotlib draws in one thread: on a
machine with several CPUs, drawing them one after another leaves all but one idle. ``drawn_together``
draws them with launchbench.forked.forked_map, after the run and its table are in memory, so every
child has both without copying them; each child builds its figure, saves it and sends back the path.
The files are the same bytes either way.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from launchbench.forked import forked_map
from launchbench.report.plots.style import save_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from launchbench.report.plots.panels import PlotTable
    from launchbench.results.schema import RunRecord

Builder = Callable[..., "Figure"]


@dataclass(frozen=True)
class FigureJob:
    """What every figure of one drawing needs: the run, its table, where and how to save."""

    run: RunRecord
    table: PlotTable
    out_dir: Path
    fmt: str
    dpi: int

    def draw(self, figure: tuple[str, Builder]) -> Path:
        """One figure (stem, builder) built and saved; its reference cycles freed before the next."""
        stem, build = figure
        path = save_figure(build(self.run, self.table), self.out_dir, stem, self.fmt, self.dpi)
        gc.collect()
        return path


def drawn_together(job: FigureJob, builders: dict[str, Builder], jobs: int) -> list[Path]:
    """Every figure of ``builders`` (stem → builder) saved, in their order, up to ``jobs`` at once in
    forked processes (forked_map; one by one here with ``jobs`` 1)."""
    return forked_map(job.draw, list(builders.items()), jobs)
