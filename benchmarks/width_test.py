"""Is a row's 95% CI wider under the new code than under the old? A test per row over each side's runs,
for benchmarks/speed_quickstart.py.

One run gives each row one CI width, and the width moves a lot from run to run (a row's CI covers its
pass medians, so it is about the range of 5 draws of the host's state). So the unit of inference is the
run: per row, the log widths of the old runs against those of the new. With a handful of runs a side a
row's own variance of log widths is very uncertain, so it is shrunk toward the variance of the rows of
its stratum (the same mode and metric over the cases), by launchbench.analysis.drift's empirical-Bayes
prior (Smyth 2004), as compare does with pass medians. Per row: the ratio of the geometric mean widths
(new/old) with its 95% interval, the one-sided p value that new is wider, whether it is wider after the
Benjamini–Hochberg step-up over the rows tested (false discovery rate 5%), and the ratio a test at
α = 5% would find with 80% power (what the comparison could not have detected: smaller widenings).

Rows tested: one per (case, mode, metric), leaving out a ``*_per_iter`` metric whose ``*_per_launch``
twin is there (the same width times the chain's launches), and rows with a zero width in some run. The
runs together: each run's mean over the tested rows of its log width less the row's mean over every
run, old runs against new (Welch's t), so rows that move together in one run count once."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from launchbench.analysis.drift import NoisePrior, RowVariance, fit_priors
from launchbench.analysis.inference import benjamini_hochberg

RowKey = tuple[str, str, str]  # (case, mode, metric)
FDR = 0.05
POWER = 0.8
ALPHA = 0.05


@dataclass(frozen=True)
class RowWidthTest:
    """One row's widths, new against old over the runs: the ratio of geometric means and its 95%
    interval, the one-sided p value that new is wider, the step-up's verdict, and the smallest ratio the
    test finds at α = 5% with 80% power."""

    key: RowKey
    ratio: float
    low: float
    high: float
    p_wider: float
    wider: bool
    detectable: float


@dataclass(frozen=True)
class OverallWidth:
    """All tested rows together, the run as the unit: the ratio (new/old) of the runs' mean log widths
    relative to each row's mean, its 95% interval (Welch), the runs on each side, and the log ratio's
    standard error (Welch's, what the interval is built on)."""

    ratio: float
    low: float
    high: float
    old_runs: int
    new_runs: int
    log_se: float


def tested_keys(old: Sequence[Mapping[RowKey, float]], new: Sequence[Mapping[RowKey, float]]) -> list[RowKey]:
    """The rows every run of both sides has, with a positive width in each, per_iter twins left out."""
    runs = [*old, *new]
    if not old or not new:
        return []
    common = set(runs[0]).intersection(*runs[1:])
    keys = [k for k in common if all(run[k] > 0 for run in runs)]
    twins = {(c, m, metric.replace("_per_launch", "_per_iter")) for c, m, metric in keys}
    return sorted(k for k in keys if not (k[2].endswith("_per_iter") and k in twins))


def _logs(runs: Sequence[Mapping[RowKey, float]], key: RowKey) -> np.ndarray:
    return np.log([run[key] for run in runs])


def _priors(
    old: Sequence[Mapping[RowKey, float]], new: Sequence[Mapping[RowKey, float]], keys: Sequence[RowKey]
) -> dict[tuple[str, bool], NoisePrior]:
    """Per stratum (the mode and metric; ``True`` stands for no host-bound split), the prior fitted to
    the rows' pooled within-side variances of log width."""
    variances: dict[tuple[str, bool], list[RowVariance]] = {}
    for key in keys:
        row = RowVariance.of(_logs(old, key), _logs(new, key))
        variances.setdefault((f"{key[1]} {key[2]}", True), []).append(row)
    return fit_priors(variances)


def _row_test(
    key: RowKey, old: np.ndarray, new: np.ndarray, prior: NoisePrior | None
) -> tuple[RowWidthTest, float]:
    """The row's test before the step-up (``wider`` False), and its p value."""
    own = RowVariance.of(old, new)
    variance, df = prior.moderate(own) if prior is not None else (own.variance, float(own.df))
    difference = float(new.mean() - old.mean())
    se = math.sqrt(variance * (1 / len(old) + 1 / len(new))) if variance > 0 else 0.0
    if not (se > 0 and df >= 1):
        return RowWidthTest(key, math.exp(difference), math.nan, math.nan, math.nan, False, math.nan), 1.0
    spread = stats.t.ppf(0.975, df) * se
    p_wider = float(stats.t.sf(difference / se, df))
    detectable = math.exp(float(stats.t.ppf(1 - ALPHA, df) + stats.t.ppf(POWER, df)) * se)
    ratio, low, high = (math.exp(difference + d) for d in (0.0, -spread, spread))
    return RowWidthTest(key, ratio, low, high, p_wider, False, detectable), p_wider


def step_up(p_values: Sequence[float], fdr: float = FDR) -> list[bool]:
    """Benjamini–Hochberg's step-up: the p values whose adjusted value (compare's own,
    launchbench.analysis.inference.benjamini_hochberg) is at most ``fdr``."""
    adjusted = benjamini_hochberg(np.asarray(p_values, dtype=float))
    return [bool(p <= fdr) for p in adjusted]


def row_tests(
    old: Sequence[Mapping[RowKey, float]], new: Sequence[Mapping[RowKey, float]]
) -> list[RowWidthTest]:
    """Every tested row's test, ``wider`` after the Benjamini–Hochberg step-up over them (2+ runs a side)."""
    if len(old) < 2 or len(new) < 2:
        return []
    keys = tested_keys(old, new)
    priors = _priors(old, new, keys)
    tested = [
        _row_test(key, _logs(old, key), _logs(new, key), priors.get((f"{key[1]} {key[2]}", True)))
        for key in keys
    ]
    verdicts = step_up([p for _, p in tested])
    return [
        RowWidthTest(t.key, t.ratio, t.low, t.high, t.p_wider, wider, t.detectable)
        for (t, _), wider in zip(tested, verdicts)
    ]


def overall(
    old: Sequence[Mapping[RowKey, float]], new: Sequence[Mapping[RowKey, float]]
) -> OverallWidth | None:
    """The tested rows together, each run one value (its mean over rows of log width less the row's mean
    over every run); None without 2 runs a side."""
    keys = tested_keys(old, new)
    if len(old) < 2 or len(new) < 2 or not keys:
        return None
    means = {key: float(np.mean(np.log([run[key] for run in [*old, *new]]))) for key in keys}

    def score(run: Mapping[RowKey, float]) -> float:
        return float(np.mean([math.log(run[key]) - means[key] for key in keys]))

    before, after = np.array([score(r) for r in old]), np.array([score(r) for r in new])
    test = stats.ttest_ind(after, before, equal_var=False)
    interval = test.confidence_interval(0.95)
    difference = float(after.mean() - before.mean())
    se = math.sqrt(after.var(ddof=1) / after.size + before.var(ddof=1) / before.size)
    return OverallWidth(
        math.exp(difference), math.exp(interval.low), math.exp(interval.high), len(old), len(new), se
    )


def summary(tests: Sequence[RowWidthTest], together: OverallWidth | None) -> str:
    """'rows wider (BH 5%): N of M; a row's test finds ≥ X× (median; 80% power); together R [L, H]'."""
    if not tests:
        return "no per-row test (fewer than 2 runs a side)"
    wider = sum(t.wider for t in tests)
    detectable = [t.detectable for t in tests if math.isfinite(t.detectable)]
    text = f"rows wider (BH 5%): {wider} of {len(tests)}"
    if detectable:
        text += f"; a row's test finds ≥ {float(np.median(detectable)):.2f}x at the median (80% power)"
    if together is not None:
        text += (
            f"; all rows together {together.ratio:.2f}x [{together.low:.2f}, {together.high:.2f}]"
            f" ({together.old_runs} old runs, {together.new_runs} new)"
        )
    return text
