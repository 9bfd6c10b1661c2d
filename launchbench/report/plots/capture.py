"""The figure of the capture table (report/capture_table.py): per size, the time per step of eager and of
each graph mode, each graph's setup time and memory, the cumulative time and memory to capture every size
up to each one, and the break-even in steps."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # no display: figures go to files

from enum import Enum  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from launchbench.analysis.table import HostLevels, run_table  # noqa: E402
from launchbench.errors import LaunchbenchError  # noqa: E402
from launchbench.report.capture_table import capture_table, markdown  # noqa: E402
from launchbench.report.plots.style import (  # noqa: E402
    DPI,
    MODE_COLOURS,
    MODE_LABELS,
    MODE_MARKERS,
    STYLE,
    WIDTH_IN,
    save_figure,
)
from launchbench.results.schema import MEASURED_STATUSES, RunRecord  # noqa: E402

MIB = 2**20


class Line(Enum):
    """A series' line: SOLID (times) or DASHED, a little thinner (memory, on the twin axis)."""

    SOLID = "-"
    DASHED = "--"


def _series(
    ax: Axes, rows: pd.DataFrame, column: str, mode: str, scale: float = 1.0, line: Line = Line.SOLID
) -> None:
    dashed = line is Line.DASHED
    measured = rows[rows["status"].isin(MEASURED_STATUSES)]
    y = pd.to_numeric(measured[column], errors="coerce") * scale
    if y.notna().any():
        ax.plot(measured["size"], y, color=MODE_COLOURS[mode], marker=MODE_MARKERS[mode], markersize=4,
                linewidth=1.1 if dashed else 1.3, linestyle=line.value, label=MODE_LABELS[mode])  # fmt: skip


def _step_panel(ax: Axes, rows: pd.DataFrame) -> None:
    """µs per step against size: eager once, each graph mode."""
    eager = rows.drop_duplicates("size")
    ax.plot(eager["size"], eager["eager_us_per_step"], color=MODE_COLOURS["eager"], marker=MODE_MARKERS["eager"],
            markersize=4, linewidth=1.3, label=MODE_LABELS["eager"])  # fmt: skip
    for mode, group in rows.groupby("mode", sort=False):
        _series(ax, group, "graph_us_per_step", str(mode))
    ax.set_ylabel("µs per step (wall)")
    ax.set_title("one step")


def _panels(fig: Figure, rows: pd.DataFrame, axis: str) -> list[Axes]:
    axes = list(np.ravel(fig.subplots(2, 2)))
    _step_panel(axes[0], rows)
    memory = axes[2].twinx()
    memory.grid(False)
    for mode, group in rows.groupby("mode", sort=False):
        _series(axes[1], group, "setup_us", str(mode), 1e-3)
        _series(axes[2], group, "cumulative_setup_s", str(mode))
        _series(memory, group, "cumulative_mem_bytes", str(mode), 1 / MIB, Line.DASHED)
        _series(axes[3], group, "break_even_steps", str(mode))
    axes[1].set(title="capture + instantiate + upload, per size", ylabel="ms")
    axes[2].set(title="every size up to N captured", ylabel="cumulative capture s (solid)")
    memory.set_ylabel("cumulative memory MiB (dashed)")
    axes[3].set(title="break-even", ylabel="steps until the graph pays back")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.set_xlabel(axis)
    for ax in (axes[0], axes[3]):
        ax.set_yscale("log")
    return axes


def figure_capture_table(rows: pd.DataFrame, axis: str = "batch", title: str = "") -> Figure:
    """The four panels of one chain's capture table (rows of capture_table for one chain)."""
    with matplotlib.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH_IN, 6.4), dpi=DPI, layout="constrained")
        axes = _panels(fig, rows, axis)
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="outside lower center", ncol=3, frameon=False)
        fig.suptitle(title or "Graph capture cost per size", fontweight="bold")
    return fig


def write_capture_files(run: RunRecord, out_dir: Path, axis: str = "batch", fmt: str = "png") -> list[Path]:
    """capture_table.csv and capture_table.md of ``run``, and one figure per chain
    (capture_table[_<scenario>_<chain>].<fmt>), written into ``out_dir`` (created); the paths."""
    rows = capture_table(run_table(run, levels=HostLevels.SKIP), axis)
    if rows.empty:
        raise LaunchbenchError(
            f"{out_dir}: writing the capture table: the run holds no graph mode swept over '{axis}'"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    written = [out_dir / "capture_table.csv", out_dir / "capture_table.md"]
    rows.to_csv(written[0], index=False)
    written[1].write_text(markdown(rows, axis), encoding="utf-8")
    chains = list(rows.groupby(["scenario", "chain", "others"], sort=False))
    for index, ((scenario, chain, others), group) in enumerate(chains, start=1):
        name = "capture_table" if len(chains) == 1 else f"capture_table_{index}_{scenario}_{chain}"
        extra = "" if others == "{}" else f" {others}"
        figure = figure_capture_table(
            group, axis, f"{scenario}: {chain}{extra}: graph capture cost per {axis}"
        )
        written.append(save_figure(figure, out_dir, name, fmt))
    return written
