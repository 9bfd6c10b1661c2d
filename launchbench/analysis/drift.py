"""How much a row moves between passes: its own variance of log pass medians, shrunk toward the
variance of rows like it (an empirical-Bayes prior; docs/statistics.md gives the model and why).

A pass sits in one host state (its samples are not independent of each other), so the unit of
inference is the pass: a row's noise is the variance of its log pass medians. With five passes that
variance has four degrees of freedom and is itself very uncertain; rows of one kind share their
noise source, so each row's variance is shrunk toward the value its stratum shows, by how much the
data say the rows differ (Smyth, "Linear models and empirical Bayes methods for assessing
differential expression in microarray experiments", *Stat. Appl. Genet. Mol. Biol.* 3(1), 2004:
a scaled inverse-χ² prior fitted by moments of the log variances, and the posterior variance
(d0·s0² + d·s²)/(d0 + d) with d0 + d degrees of freedom). Rows whose spreads agree are pooled almost
fully; a quiet row among noisy ones keeps most of its own small variance.

Strata: host-bound rows (the launch loop keeps the CPU busy: eager chains, a one-launch graph; their
time is the host's launch cost) and the others (their time is the GPU's), per metric; the CPU-time
metrics of every row are the host's own time and count as host-bound.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from launchbench.results.schema import CaseResult

HOST_BOUND_SHARE = 0.8  # CPU time at least 80% of the wall time: the row measures the host's launch cost
HOST_METRICS = frozenset({"cpu_us_per_launch", "cpu_us_per_iter"})  # the host's own time, in every row
MIN_ROWS_FOR_PRIOR = 3  # fewer rows with a variance in a stratum: the metric's rows together


def is_host_bound(case: CaseResult, mode: str) -> bool:
    """The row's launch loop keeps the CPU busy for at least HOST_BOUND_SHARE of its wall time: its time
    is the host's launch cost, which moves with the host's speed state."""
    wall = case.metric_samples(mode, "wall_us_per_iter")
    cpu = case.metric_samples(mode, "cpu_us_per_iter")
    if len(wall) == 0 or len(cpu) == 0:
        return False
    wall_median = float(np.median(wall))
    return wall_median > 0 and float(np.median(cpu)) >= HOST_BOUND_SHARE * wall_median


def stratum(metric: str, host_bound: bool) -> tuple[str, bool]:
    """The group of rows whose noise is alike: (metric, host-bound), CPU-time metrics host-bound always."""
    return (metric, host_bound or metric in HOST_METRICS)


@dataclass(frozen=True)
class RowVariance:
    """A row's variance of log pass medians (or of log round ratios) and its degrees of freedom."""

    variance: float
    df: int

    @staticmethod
    def of(*groups: np.ndarray) -> RowVariance:
        """Pooled within-group variance of the given groups of log values (e.g. baseline and current)."""
        df, squares = 0, 0.0
        for group in groups:
            values = group.tolist()  # a handful of passes: plain floats cost less than numpy's reductions
            if values:
                mean = math.fsum(values) / len(values)
                squares += math.fsum((v - mean) ** 2 for v in values)
                df += len(values) - 1
        return RowVariance(squares / df if df > 0 else math.nan, df)


@dataclass(frozen=True)
class NoisePrior:
    """A scaled inverse-χ² prior on the rows' variances: typical value ``variance`` (s0²) worth ``df``
    (d0) degrees of freedom; df = inf when the rows' variances differ no more than sampling explains."""

    variance: float
    df: float

    def moderate(self, row: RowVariance) -> tuple[float, float]:
        """(variance, df) of the row after shrinkage: (d0·s0² + d·s²)/(d0 + d) on d0 + d df."""
        if math.isinf(self.df):
            return self.variance, math.inf
        if row.df == 0 or math.isnan(row.variance):
            return self.variance, self.df
        total = self.df + row.df
        return (self.df * self.variance + row.df * row.variance) / total, total


def _trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (y > 0), by Newton's method on 1/trigamma as limma's ``trigammaInverse``
    takes it (Smyth 2004, the same paper's estimate): from x = 0.5 + 1/y, where trigamma(x) ≈ 1/x + 1/(2x²)
    makes 1/trigamma nearly linear, each step converges quadratically; stopped once a step is below 1e-14
    of x (limma stops at 1e-8), at most 50 steps. Loads no scipy.optimize (a sixth of compare's start on
    2 cores); trigamma falls from +inf to 0 on (0, inf)."""
    if y > 1e7:
        return 1 / math.sqrt(y)  # trigamma(x) ≈ 1/x² near 0
    if y < 1e-6:
        return 1 / y  # trigamma(x) ≈ 1/x for large x
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if abs(step) <= 1e-14 * x:
            break
    return x


def fit_prior(rows: Iterable[RowVariance]) -> NoisePrior | None:
    """Smyth's (2004) moment estimate of the prior from rows' variances; None with fewer than
    MIN_ROWS_FOR_PRIOR rows that have a positive variance."""
    usable = [r for r in rows if r.df > 0 and r.variance > 0 and math.isfinite(r.variance)]
    if len(usable) < MIN_ROWS_FOR_PRIOR:
        return None
    s2 = np.array([r.variance for r in usable])
    d = np.array([r.df for r in usable], dtype=float)
    e = np.log(s2) - special.digamma(d / 2) + np.log(d / 2)
    e_mean = float(e.mean())
    excess = float(np.var(e, ddof=1) - np.mean(special.polygamma(1, d / 2)))
    if excess <= 0:
        return NoisePrior(math.exp(e_mean), math.inf)
    d0 = 2 * _trigamma_inverse(excess)
    return NoisePrior(math.exp(e_mean + special.digamma(d0 / 2) - math.log(d0 / 2)), d0)


def fit_priors(rows: Mapping[tuple[str, bool], Sequence[RowVariance]]) -> dict[tuple[str, bool], NoisePrior]:
    """A prior per stratum; a stratum with too few rows gets the prior of its metric's rows together."""
    by_metric: dict[str, list[RowVariance]] = {}
    for (metric, _), variances in rows.items():
        by_metric.setdefault(metric, []).extend(variances)
    metric_priors = {metric: fit_prior(variances) for metric, variances in by_metric.items()}
    out = {}
    for key, variances in rows.items():
        prior = fit_prior(variances) or metric_priors[key[0]]
        if prior is not None:
            out[key] = prior
    return out
