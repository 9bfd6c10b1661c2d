"""Cost models of wall time per iteration, per mode, fitted by weighted least squares on the per-case
medians with relative weights (1/y), because the times span orders of magnitude; the parameters'
standard errors come from the fit's covariance.

- Over chain length: time = fixed + per_launch × launches. From the eager and graph fits follow the
  per-launch saving, the asymptotic speedup and the crossover: the chain length above which the graph is
  faster per iteration.
- Over iterations per shape, for a chain whose sizes change (modes eager, recapture, cache, update):
  time = fixed + per_change / iterations_per_shape, where fixed is an iteration without a change and
  per_change what a change costs. From the fits follow, per strategy, the iterations per shape above
  which it beats eager, and the range of iterations per shape in which it is the fastest of all (the
  lower envelope of the fitted curves).

``cost_model_table`` is costmodel.csv: both kinds of rows, told apart by ``fit``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
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
    "beats_eager_above_iters_per_shape",
    "beats_eager_above_iters_per_shape_se",
    "wins_from_iters_per_shape",
    "wins_to_iters_per_shape",
]
CSV_COLUMNS = [*COLUMNS, *SHAPE_COLUMNS]


def _beats_eager(eager: dict[str, float], mode: dict[str, float]) -> tuple[float, float]:
    """Iterations per shape above which ``mode`` is faster per iteration than eager, and its standard
    error (delta method; the two fits independent): k = (per_change − eager per_change) / (eager fixed − fixed)."""
    gap = eager["fixed"] - mode["fixed"]
    if gap <= 0:
        return math.inf, math.nan
    extra = mode["per"] - eager["per"]
    k = max(extra / gap, 0.0)
    var = (
        (mode["per_se"] ** 2 + eager["per_se"] ** 2)
        + k**2 * (mode["fixed_se"] ** 2 + eager["fixed_se"] ** 2)
        + 2 * k * (mode["cov"] + eager["cov"])
    ) / gap**2
    return k, math.sqrt(max(var, 0.0))


EXTRAPOLATE = 10.0  # crossings up to this many times the largest measured iterations per shape count
TIE_Z = 1.96  # fixed costs closer than this many standard errors of their difference tie


def winning_ranges(
    lines: Mapping[str, tuple[float, float, float]], largest: float = math.inf
) -> dict[str, tuple[float, float]]:
    """For lines time = fixed + per_change × x (x = 1 / iterations per shape; ``lines`` maps a mode to
    (fixed, per_change, fixed's standard error)), the range of iterations per shape [from, to) in which
    each mode is the fastest (to = inf: every k from ``from`` on); modes never the fastest are left out.

    Two lines cross where the iterations per shape are not beyond EXTRAPOLATE × ``largest`` (the largest
    measured) and their fixed costs differ at 95% confidence; otherwise they do not cross: as the
    iterations per shape grow, both tend to what an iteration without a change costs, and which of two
    equal replays is cheaper is noise."""
    cuts = {0.0, 1.0}
    names = list(lines)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            (fa, pa, sa), (fb, pb, sb) = lines[a], lines[b]
            tied = abs(fa - fb) <= TIE_Z * math.sqrt(sa**2 + sb**2) if math.isfinite(sa + sb) else False
            if pa != pb and not tied:
                x = (fb - fa) / (pa - pb)
                if 1 / (EXTRAPOLATE * largest) < x < 1:
                    cuts.add(x)
    xs = sorted(cuts)
    spans: list[tuple[str, float, float]] = []  # (winner, x_low, x_high)
    for low, high in zip(xs, xs[1:]):
        mid = (low + high) / 2
        winner = min(names, key=lambda m: (lines[m][0] + lines[m][1] * mid, m))
        if spans and spans[-1][0] == winner:
            spans[-1] = (winner, spans[-1][1], high)
        else:
            spans.append((winner, low, high))
    return {name: (1 / high, math.inf if low == 0 else 1 / low) for name, low, high in spans}


def fit_shape_model(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (scenario, chain, other sweep values, mode) of a chain whose sizes change, where the
    iterations per shape take ≥ 2 values: time per iteration = fixed + per_change / iterations per shape."""
    if "iterations_per_shape" not in table:
        return pd.DataFrame(columns=CSV_COLUMNS)
    usable = table[
        table["status"].isin(list(MEASURED_STATUSES))
        & table["wall_us_per_iter"].notna()
        & table["iterations_per_shape"].notna()
    ]
    records = usable[
        ["scenario", "chain", "params", "mode", "iterations_per_shape", "wall_us_per_iter"]
    ].to_dict("records")
    chains: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        chains.setdefault((record["scenario"], record["chain"]), []).append(record)
    rows: list[dict[str, Any]] = []
    for (scenario, chain), group in chains.items():
        params = [json.loads(r["params"]) for r in group]
        axes = length_axes(params, [int(r["iterations_per_shape"]) for r in group])
        subgroups: dict[str, list[dict[str, Any]]] = {}
        for record, p in zip(group, params):
            key = json.dumps({k: v for k, v in p.items() if k not in axes}, sort_keys=True)
            subgroups.setdefault(key, []).append(record)
        for key, sub in subgroups.items():
            fits: dict[str, dict[str, float]] = {}
            for mode in sorted({str(r["mode"]) for r in sub}):
                per_shape = np.array(
                    [r["iterations_per_shape"] for r in sub if r["mode"] == mode], dtype=float
                )
                times = np.array([r["wall_us_per_iter"] for r in sub if r["mode"] == mode], dtype=float)
                if len(set(per_shape.tolist())) < 2:
                    continue
                fits[mode] = fit_line(1.0 / per_shape, times)
                fits[mode]["n"] = len(per_shape)
            largest = max((float(r["iterations_per_shape"]) for r in sub), default=math.inf)
            ranges = winning_ranges(
                {m: (f["fixed"], f["per"], f["fixed_se"]) for m, f in fits.items()}, largest
            )
            for mode, fit in fits.items():
                beats = _beats_eager(fits["eager"], fit) if "eager" in fits and mode != "eager" else None
                wins = ranges.get(mode)
                rows.append(
                    {
                        "scenario": scenario,
                        "chain": chain,
                        "group": key,
                        "mode": mode,
                        "n_points": fit["n"],
                        "fixed_us": fit["fixed"],
                        "fixed_us_se": fit["fixed_se"],
                        "r2": fit["r2"],
                        "fit": SHAPE_FIT,
                        "per_change_us": fit["per"],
                        "per_change_us_se": fit["per_se"],
                        "beats_eager_above_iters_per_shape": None if beats is None else beats[0],
                        "beats_eager_above_iters_per_shape_se": None if beats is None else beats[1],
                        "wins_from_iters_per_shape": None if wins is None else wins[0],
                        "wins_to_iters_per_shape": None if wins is None else wins[1],
                    }
                )
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


def cost_model_table(table: pd.DataFrame) -> pd.DataFrame:
    """costmodel.csv: the chain-length fits (``fit`` chain_length) and the iterations-per-shape fits."""
    lengths = fit_cost_model(table).assign(fit="chain_length").reindex(columns=CSV_COLUMNS)
    shapes = fit_shape_model(table)
    frames = [frame for frame in (lengths, shapes) if len(frame)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=CSV_COLUMNS)
