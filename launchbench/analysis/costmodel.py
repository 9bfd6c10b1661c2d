"""A cost model over chain length: time per iteration = fixed + per_launch × launches, per mode.

Fitted by weighted least squares on the per-case medians with relative weights (1/y), because the
times span orders of magnitude (one launch to thousands); the parameters' standard errors come from
the fit's covariance. From the two modes' fits follow the per-launch saving, the asymptotic speedup and
the crossover: the chain length above which the graph is faster per iteration.
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
    """One row per (scenario, chain, other sweep values, mode) whose chain length varies over ≥ 2 values."""
    rows: list[dict[str, Any]] = []
    usable = table[table["status"].isin(list(MEASURED_STATUSES)) & table["wall_us_per_iter"].notna()]
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
