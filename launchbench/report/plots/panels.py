"""The table the figures draw (results.csv's, for the metrics they show) and its panels: the rows of one chain
of one scenario at one value of the parameters that do not set the chain length."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from launchbench.analysis.costmodel import length_axes
from launchbench.analysis.table import HostLevels, run_table
from launchbench.results.schema import (
    METRIC_BY_NAME,
    RunRecord,
)

LENGTH_LABEL = "chain length (launches per iteration)"

PLOT_METRICS = ("wall_us_per_launch", "wall_us_per_iter", "cpu_us_per_launch")

SHAPE_METRICS = ("cpu_us_per_iter", "gpu_us_per_iter")  # what the shape cost model fits besides


@dataclass(frozen=True)
class PlotTable:
    """results.csv's table of a run for the metrics the figures draw (``rows``), and each case's sweep
    values as the run holds them (``params``, by scenario and case id; the table's ``params`` column is
    their JSON text, for results.csv's readers)."""

    rows: pd.DataFrame
    params: Mapping[tuple[str, str], Mapping[str, Any]]

    def params_of(self, rows: pd.DataFrame) -> pd.Series:
        """The sweep values of each of ``rows`` (rows of this table), on the rows' index."""
        keys = zip(rows["scenario"], rows["case"], strict=True)
        return pd.Series([self.params.get(key, {}) for key in keys], index=rows.index, dtype=object)


def plot_table(run: RunRecord, jobs: int = 1) -> PlotTable:
    """results.csv's table of ``run`` with the metrics the figures draw (and the shape model fits), and
    without the host levels, which no figure draws; its rows made ``jobs`` processes at once (run_table)."""
    names = PLOT_METRICS + (SHAPE_METRICS if has_shape_changes(run) else ())
    rows = run_table(run, [METRIC_BY_NAME[name] for name in names], levels=HostLevels.SKIP, jobs=jobs)
    return PlotTable(rows, {(case.scenario, case.case_id): case.params for case in run.cases})


def table_of(run: RunRecord, table: PlotTable | None) -> PlotTable:
    return plot_table(run) if table is None else table


@dataclass(frozen=True)
class Panel:
    """The rows (both modes) of one chain of one scenario, at one value of the non-length parameters."""

    scenario: str
    chain: str
    variant: str  # the parameters that do not set the chain length, as "size=1000, dtype=float32"
    title: str
    rows: pd.DataFrame

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario, self.chain, self.variant)

    @property
    def varying_length(self) -> bool:
        return self.rows["launches_per_iter"].nunique() > 1

    def mode_rows(self, mode: str, column: str | None = None) -> pd.DataFrame:
        """Rows of one mode by chain length; only those with a finite ``column`` when one is named."""
        rows = self.rows[self.rows["mode"] == mode].sort_values("launches_per_iter")
        if column is not None:
            rows = rows[np.isfinite(numbers(rows, column))]
        return rows


def numbers(rows: pd.DataFrame, column: str) -> np.ndarray:
    """A column as floats, missing values (None, empty) as NaN."""
    if column not in rows:
        return np.full(len(rows), math.nan)
    return pd.to_numeric(rows[column], errors="coerce").to_numpy(dtype=float)


def variant_text(params: Mapping[str, Any], keys: Sequence[str]) -> str:
    return ", ".join(f"{k}={params[k]}" for k in keys if k in params)


def panels(table: PlotTable) -> list[Panel]:
    """Group a results table by (scenario, chain), then by the parameters that do not set the length.
    Chains whose sizes change have their own figure (figure_shape_changes) and are left out."""
    rows = table.rows
    if "iterations_per_shape" in rows:
        rows = rows[rows["iterations_per_shape"].isna()]
    if rows.empty:
        return []
    several_scenarios = rows["scenario"].nunique() > 1
    out: list[Panel] = []
    for (scenario, chain), group in rows.groupby(["scenario", "chain"], sort=False):
        params = table.params_of(group)
        length_keys = length_axes(list(params), group["launches_per_iter"])  # as the cost model's fit
        varying = sorted(
            k
            for k in {k for p in params for k in p} - length_keys
            if params.map(lambda p, k=k: json.dumps(p.get(k))).nunique() > 1
        )
        variants = params.map(lambda p, v=varying: variant_text(p, v))
        for variant, panel_rows in group.groupby(variants, sort=False):
            kinds = str(panel_rows["kinds"].iloc[0])
            title = chain if kinds == chain else f"{chain} ({kinds})"
            if several_scenarios:
                title = f"{scenario}: {title}"
            if variant:
                title = f"{title}, {variant}"
            out.append(Panel(str(scenario), str(chain), str(variant), title, panel_rows))
    return out


def has_shape_changes(run: RunRecord) -> bool:
    return any(case.shapes is not None for case in run.cases)
