"""Cost models of wall time per iteration, per mode, fitted by weighted least squares on the per-case
medians with relative weights (1/y), because the times span orders of magnitude; the parameters'
standard errors come from the fit's covariance.

- Over chain length: time = fixed + per_launch × launches. From the eager and graph fits follow the
  per-launch saving, the asymptotic speedup and the crossover: the chain length above which the graph is
  faster per iteration.
- Over iterations per shape k, for a chain whose sizes change (modes eager, recapture, cache, update):
  time = max(gpu_bound, host + per_change / k), built from what each mode's rows measured (ShapeCost):
  the setup per change, the host's time per iteration and the GPU's. From the curves follow, per
  strategy, the iterations per shape above which it beats eager, and the range in which it is the
  fastest of all.

``cost_model_table`` is costmodel.csv: both kinds of rows, told apart by ``fit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from launchbench.results.schema import MEASURED_STATUSES

COLUMNS = [
    "scenario",
    "chain",
    "group",
    "mode",
    "n_points",
    "fixed_us",
    "fixed_us_se",
    "per_launch_us",
    "per_launch_us_se",
    "r2",
    "crossover_launches",
    "crossover_launches_se",
    "saving_us_per_launch",
    "asymptotic_speedup",
]


def fit_line(launches: np.ndarray, times: np.ndarray) -> dict[str, float]:
    """Weighted least squares of times = fixed + per_launch × launches with weights 1/times."""
    x = np.asarray(launches, dtype=float)
    y = np.asarray(times, dtype=float)
    weights = 1.0 / y
    design = np.column_stack([np.ones_like(x), x]) * weights[:, None]
    target = y * weights
    coef, *_ = np.linalg.lstsq(design, target, rcond=None)
    fixed, per_launch = float(coef[0]), float(coef[1])
    residuals = target - design @ coef
    dof = len(x) - 2
    if dof > 0:
        sigma2 = float(residuals @ residuals) / dof
        cov = sigma2 * np.linalg.inv(design.T @ design)
        fixed_se, per_se = float(math.sqrt(max(cov[0, 0], 0))), float(math.sqrt(max(cov[1, 1], 0)))
        cov01 = float(cov[0, 1])
    else:
        fixed_se = per_se = cov01 = math.nan
    predicted = fixed + per_launch * x
    ss_res = float(np.sum(((y - predicted) * weights) ** 2))
    ss_tot = float(np.sum(((y - np.average(y, weights=weights**2)) * weights) ** 2))
    r2 = 1 - ss_res / ss_tot if ss_tot > 0 else math.nan
    return {"fixed": fixed, "fixed_se": fixed_se, "per": per_launch, "per_se": per_se, "cov": cov01, "r2": r2}


def length_axes(params: Sequence[Mapping[str, Any]], launches_per_iter: Iterable[int]) -> set[str]:
    """Sweep axes along which the number of launches per iteration changes, the other axes held fixed:
    the chain-length axes of a fit (and of a plot's x axis). ``params`` are the rows' sweep values."""
    launch_counts = list(launches_per_iter)
    axes: set[str] = set()
    for axis in {k for p in params for k in p}:
        by_rest: dict[str, set[int]] = {}
        for p, launches in zip(params, launch_counts):
            rest = json.dumps({k: v for k, v in p.items() if k != axis}, sort_keys=True)
            by_rest.setdefault(rest, set()).add(int(launches))
        if any(len(v) > 1 for v in by_rest.values()):
            axes.add(axis)
    return axes


def _crossover(eager: dict[str, float], graph: dict[str, float]) -> tuple[float, float]:
    """Chain length above which graph time per iteration is below eager's, and its standard error."""
    saving = eager["per"] - graph["per"]
    if saving <= 0:
        return math.inf, math.nan
    gap = graph["fixed"] - eager["fixed"]
    crossover = max(gap / saving, 0.0)
    # delta method: the two modes' fits are independent, each fit's intercept and slope are not
    # (cov(gap, saving) = -(cov_eager + cov_graph) of fixed vs per-launch)
    d_gap = 1 / saving
    d_saving = -gap / saving**2
    var = (
        d_gap**2 * (graph["fixed_se"] ** 2 + eager["fixed_se"] ** 2)
        + d_saving**2 * (eager["per_se"] ** 2 + graph["per_se"] ** 2)
        - 2 * d_gap * d_saving * (eager["cov"] + graph["cov"])
    )
    return crossover, math.sqrt(var)


def fit_cost_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (scenario, chain, other sweep values, mode) whose chain length varies over ≥ 2 values
    (chains of fixed sizes; a chain whose sizes change is fitted by fit_shape_model)."""
    rows: list[dict[str, Any]] = []
    usable = table[table["status"].isin(list(MEASURED_STATUSES)) & table["wall_us_per_iter"].notna()]
    if "iterations_per_shape" in usable:
        usable = usable[usable["iterations_per_shape"].isna()]
    records = usable[
        ["scenario", "chain", "params", "mode", "launches_per_iter", "wall_us_per_iter"]
    ].to_dict("records")
    chains: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        chains.setdefault((record["scenario"], record["chain"]), []).append(record)
    for (scenario, chain), group in chains.items():
        params = [json.loads(r["params"]) for r in group]
        axes = length_axes(params, [r["launches_per_iter"] for r in group])
        if not axes:
            continue
        subgroups: dict[str, list[dict[str, Any]]] = {}
        for record, p in zip(group, params):
            key = json.dumps({k: v for k, v in p.items() if k not in axes}, sort_keys=True)
            subgroups.setdefault(key, []).append(record)
        for key, sub in subgroups.items():
            fits: dict[str, dict[str, float]] = {}
            for mode in sorted({str(r["mode"]) for r in sub}):
                launches = np.array([r["launches_per_iter"] for r in sub if r["mode"] == mode], dtype=float)
                times = np.array([r["wall_us_per_iter"] for r in sub if r["mode"] == mode], dtype=float)
                if len(set(launches.tolist())) < 2:
                    continue
                fits[mode] = fit_line(launches, times)
                fits[mode]["n"] = len(launches)
            pair: dict[str, float] = {}
            if "eager" in fits and "graph" in fits:
                crossover, crossover_se = _crossover(fits["eager"], fits["graph"])
                pair = {
                    "crossover_launches": crossover,
                    "crossover_launches_se": crossover_se,
                    "saving_us_per_launch": fits["eager"]["per"] - fits["graph"]["per"],
                    "asymptotic_speedup": fits["eager"]["per"] / fits["graph"]["per"]
                    if fits["graph"]["per"] > 0
                    else math.inf,
                }
            for mode, fit in fits.items():
                rows.append(
                    {
                        "scenario": scenario,
                        "chain": chain,
                        "group": key,
                        "mode": mode,
                        "n_points": fit["n"],
                        "fixed_us": fit["fixed"],
                        "fixed_us_se": fit["fixed_se"],
                        "per_launch_us": fit["per"],
                        "per_launch_us_se": fit["per_se"],
                        "r2": fit["r2"],
                        **pair,
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)


SHAPE_FIT = "iterations_per_shape"
SHAPE_COLUMNS = [
    "fit",
    "per_change_us",
    "per_change_us_se",
    "host_us",
    "gpu_bound_us",
    "beats_eager_above_iters_per_shape",
    "wins_from_iters_per_shape",
    "wins_to_iters_per_shape",
    "rel_rmse",
]
CSV_COLUMNS = [*COLUMNS, *SHAPE_COLUMNS]
EXTRAPOLATE = 10.0  # the model is read up to this many times the largest measured iterations per shape
TIE = 0.02  # a strategy takes over as the fastest only when it is cheaper by more than this share
GRID = 2000  # points of the log-spaced grid of iterations per shape on which curves are compared


@dataclass(frozen=True)
class ShapeCost:
    """A mode's cost per iteration at k iterations per shape: max(gpu_bound, host + per_change / k).

    The host pays ``host`` µs per iteration (launches, or a graph replay) and ``per_change`` µs at every
    change (capture, instantiate, upload, update); the GPU needs ``gpu_bound`` µs per iteration. Whichever
    is longer paces the iterations: a change's setup costs nothing while the GPU still has replays
    queued, so the costs add only when the host is the bottleneck."""

    gpu_bound: float
    host: float
    per_change: float

    def at(self, k: np.ndarray | float) -> np.ndarray:
        return np.maximum(self.gpu_bound, self.host + self.per_change / np.asarray(k, dtype=float))


def shape_cost(rows: pd.DataFrame) -> tuple[ShapeCost, dict[str, float]]:
    """One mode's ShapeCost from its measured rows (columns of results.csv), and the line fit behind it:
    host and per_change from a weighted least-squares line of the launching thread's CPU time per
    iteration against 1 / k (all the host does at a change, setup and the first replay after it alike),
    gpu_bound the least GPU time per iteration (at the most iterations per shape: the GPU's own work; the
    wall time where no GPU time was measured)."""
    k = rows["iterations_per_shape"].to_numpy(dtype=float)
    cpu = pd.to_numeric(rows["cpu_us_per_iter"], errors="coerce").to_numpy(dtype=float)
    wall = rows["wall_us_per_iter"].to_numpy(dtype=float)
    known = np.isfinite(cpu) & (cpu > 0)
    line = fit_line(1.0 / k[known], cpu[known]) if known.sum() >= 2 else fit_line(1.0 / k, wall)
    gpu = (
        pd.to_numeric(rows["gpu_us_per_iter"], errors="coerce").to_numpy(dtype=float)
        if "gpu_us_per_iter" in rows
        else np.full(len(rows), math.nan)
    )
    gpu_bound = float(np.nanmin(gpu)) if np.isfinite(gpu).any() else float(np.nanmin(wall))
    cost = ShapeCost(gpu_bound=gpu_bound, host=max(line["fixed"], 0.0), per_change=max(line["per"], 0.0))
    return cost, line


def _grid(largest: float) -> np.ndarray:
    return np.geomspace(1.0, max(EXTRAPOLATE * largest, 2.0), GRID)


def winning_ranges(costs: Mapping[str, ShapeCost], largest: float) -> dict[str, tuple[float, float]]:
    """The range of iterations per shape [from, to) in which each mode is the fastest (to = inf: from
    ``from`` on, as far as the model is read: EXTRAPOLATE × ``largest``, the most measured); modes never
    the fastest are left out. The fastest changes only where another mode is cheaper by more than TIE:
    as the iterations per shape grow, the graph strategies tend to the same replay, and which of two
    equal replays is cheaper is noise."""
    grid = _grid(largest)
    names = list(costs)
    curves = np.vstack([costs[name].at(grid) for name in names])
    spans: list[tuple[str, float, float]] = []
    current = int(np.argmin(curves[:, 0]))
    start = grid[0]
    for column in range(1, len(grid)):
        best = int(np.argmin(curves[:, column]))
        if best != current and curves[best, column] < curves[current, column] * (1 - TIE):
            spans.append((names[current], start, grid[column]))
            current, start = best, grid[column]
    spans.append((names[current], start, math.inf))
    out: dict[str, tuple[float, float]] = {}
    for name, low, high in spans:  # a mode that wins twice keeps its first range
        out.setdefault(name, (float(low), float(high)))
    return out


def beats_eager(eager: ShapeCost, mode: ShapeCost, largest: float) -> float:
    """The fewest iterations per shape at which ``mode`` costs less per iteration than eager (1: from
    the first; inf: not within EXTRAPOLATE × ``largest``), read off the grid."""
    grid = _grid(largest)
    cheaper = mode.at(grid) < eager.at(grid)
    if not cheaper.any():
        return math.inf
    first = int(np.argmax(cheaper))
    return 1.0 if first == 0 else float(grid[first])  # within the grid's step, 0.35%


def _relative_rmse(measured: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.sqrt(np.mean(((predicted - measured) / measured) ** 2)))


def _mode_costs(group: pd.DataFrame) -> tuple[dict[str, ShapeCost], dict[str, dict[str, Any]]]:
    """Each mode's ShapeCost in one group of rows, and its fit (line, points, relative RMSE); a mode
    measured at fewer than two numbers of iterations per shape has no line and is left out."""
    costs: dict[str, ShapeCost] = {}
    fits: dict[str, dict[str, Any]] = {}
    for mode, mode_rows in group.groupby("mode", sort=False):
        if mode_rows["iterations_per_shape"].nunique() < 2:
            continue
        cost, line = shape_cost(mode_rows)
        costs[str(mode)] = cost
        k = mode_rows["iterations_per_shape"].to_numpy(dtype=float)
        wall = mode_rows["wall_us_per_iter"].to_numpy(dtype=float)
        fits[str(mode)] = {**line, "n": len(mode_rows), "rel_rmse": _relative_rmse(wall, cost.at(k))}
    return costs, fits


def fit_shape_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (scenario, chain, other sweep values, mode) of a chain whose sizes change, where the
    iterations per shape take ≥ 2 values: the mode's ShapeCost (``fixed_us`` is its cost without a
    change, max(gpu_bound, host); ``r2`` that of the CPU-time line), how far it is from the measured wall
    times (``rel_rmse``), where it beats eager and where it is the fastest of all."""
    if "iterations_per_shape" not in table:
        return pd.DataFrame(columns=CSV_COLUMNS)
    usable = table[
        table["status"].isin(list(MEASURED_STATUSES))
        & table["wall_us_per_iter"].notna()
        & table["iterations_per_shape"].notna()
    ]
    rows: list[dict[str, Any]] = []
    for (scenario, chain), group in usable.groupby(["scenario", "chain"], sort=False):
        params = [json.loads(p) for p in group["params"]]
        axes = length_axes(params, [int(k) for k in group["iterations_per_shape"]])
        keys = [json.dumps({k: v for k, v in p.items() if k not in axes}, sort_keys=True) for p in params]
        for key, sub in group.groupby(keys, sort=False):
            costs, fits = _mode_costs(sub)
            if not costs:  # one number of iterations per shape: no line to fit for any mode
                continue
            largest = float(sub["iterations_per_shape"].max())
            ranges = winning_ranges(costs, largest)
            for mode, cost in costs.items():
                wins = ranges.get(mode)
                beats = (
                    beats_eager(costs["eager"], cost, largest)
                    if "eager" in costs and mode != "eager"
                    else None
                )
                rows.append(
                    {
                        "scenario": scenario,
                        "chain": chain,
                        "group": str(key),
                        "mode": mode,
                        "n_points": fits[mode]["n"],
                        "fixed_us": float(cost.at(math.inf)),
                        "fixed_us_se": fits[mode]["fixed_se"] if cost.host >= cost.gpu_bound else math.nan,
                        "r2": fits[mode]["r2"],
                        "fit": SHAPE_FIT,
                        "per_change_us": cost.per_change,
                        "per_change_us_se": fits[mode]["per_se"],
                        "host_us": cost.host,
                        "gpu_bound_us": cost.gpu_bound,
                        "beats_eager_above_iters_per_shape": beats,
                        "wins_from_iters_per_shape": None if wins is None else wins[0],
                        "wins_to_iters_per_shape": None if wins is None else wins[1],
                        "rel_rmse": fits[mode]["rel_rmse"],
                    }
                )
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


def cost_model_table(table: pd.DataFrame) -> pd.DataFrame:
    """costmodel.csv: the chain-length fits (``fit`` chain_length) and the iterations-per-shape fits."""
    lengths = fit_cost_model(table).assign(fit="chain_length").reindex(columns=CSV_COLUMNS)
    shapes = fit_shape_model(table)
    frames = [frame for frame in (lengths, shapes) if len(frame)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CSV_COLUMNS)
