"""The inference on one row-metric's log change: the t interval and test over passes (or rounds), the
exact bootstrap of the ratio of medians for rows of one pass, the trimmed mean of paired rounds, and the
verdict rules (``decide``; the table is in launchbench.analysis.compare's docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from launchbench.analysis.comparison import CompareSettings, Verdict
from launchbench.analysis.drift import RowVariance

POWER = 0.8  # the MDE is the change detected with this probability


def bootstrap_medians(samples: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Draws from the bootstrap distribution of the sample median (exact, from order statistics)."""
    from scipy import stats as sps  # rows of one pass only: compare's start need not import scipy.stats

    values = np.sort(np.asarray(samples, dtype=float))
    n = len(values)
    u = rng.random(resamples)
    probs = np.arange(1, n + 1) / n

    def order_statistic(rank: int) -> np.ndarray:
        cdf = sps.binom.sf(rank - 1, n, probs)  # P(resample's rank-th smallest ≤ values[k])
        cdf[-1] = 1.0
        return values[np.minimum(np.searchsorted(cdf, u, side="left"), n - 1)]

    if n % 2:
        return order_statistic((n + 1) // 2)
    return 0.5 * (order_statistic(n // 2) + order_statistic(n // 2 + 1))


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg adjusted p values: scipy.stats.false_discovery_control(p_values, method="bh"),
    its operations in its order (tests hold the two equal), written out so that compare and ab need not
    import scipy.stats (half a second of their start on 2 cores)."""
    count = len(p_values)
    if count <= 1:
        return p_values
    order = np.argsort(p_values)
    ranked = p_values[order] * (count / np.arange(1, count + 1, dtype=float))
    ranked = np.minimum.accumulate(ranked[::-1])[::-1]
    adjusted = np.empty_like(ranked)
    adjusted[order] = ranked
    return np.clip(adjusted, 0.0, 1.0)


@dataclass(frozen=True)
class Inference:
    """What a row's evidence says about log(current / baseline)."""

    ratio_ci: tuple[float, float]
    p_value: float
    significant: bool
    mde: float


def t_inference(
    centers: Sequence[float], se: float, df: float, confidence: float, alpha: float, power: float = POWER
) -> Inference:
    """t interval of a log change with standard error ``se`` on ``df`` degrees of freedom, placed around
    every one of ``centers`` (the first is the tested estimate); the two-sided p value of a zero change;
    the MDE at level ``alpha`` and ``power``."""
    estimate = centers[0]
    half = float(special.stdtrit(df, (1 + confidence) / 2)) * se  # the t quantile (scipy's fast ufunc)
    no_spread = 0.0 if estimate != 0 else 1.0
    p = float(2 * special.stdtr(df, -abs(estimate) / se)) if se > 0 else no_spread
    mde = math.expm1((float(special.stdtrit(df, 1 - alpha / 2)) + float(special.stdtrit(df, power))) * se)
    return Inference((math.exp(min(centers) - half), math.exp(max(centers) + half)), p, p < alpha, mde)


def bootstrap_inference(
    baseline: np.ndarray, current: np.ndarray, settings: CompareSettings, power: float = POWER
) -> Inference:
    """One pass a side: the exact bootstrap of the ratio of sample medians; no p value (samples of one
    pass are not independent draws), significant when the CI excludes 1; the MDE from the CI's width."""
    rng = np.random.default_rng(settings.seed)
    base = bootstrap_medians(baseline, settings.resamples, rng)
    cur = bootstrap_medians(current, settings.resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = cur / base
    if not np.all(np.isfinite(ratios)) or np.any(ratios <= 0):
        return Inference((math.nan, math.nan), math.nan, False, math.nan)
    tail = (1 - settings.confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    z = float(special.ndtri((1 + settings.confidence) / 2))
    se = math.log(high / low) / (2 * z)
    mde = math.expm1((float(special.ndtri(1 - settings.alpha / 2)) + float(special.ndtri(power))) * se)
    return Inference((low, high), math.nan, low > 1 or high < 1, mde)


def decide(significant: bool, change: float, change_ci: tuple[float, float], threshold: float) -> Verdict:
    """The verdict rules (see the module docstring). ``change`` and its CI are relative (0.1 = +10%).

    A direction needs all three: significance (p < alpha), |change| ≥ threshold, and a CI on that side
    of 0."""
    low, high = change_ci
    if math.isnan(change) or math.isnan(low) or math.isnan(high):
        return "uncertain"
    if abs(change) >= threshold:
        if significant and change > 0 and low > 0:
            return "slower"
        if significant and change < 0 and high < 0:
            return "faster"
        return "uncertain"
    if -threshold <= low and high <= threshold:
        return "same"
    return "uncertain"


ROUND_TRIM = 0.2  # share of a paired row's rounds trimmed from each end ...
TRIM_FROM_ROUNDS = 10  # ... once it has at least this many rounds (ab's default)


def trimmed_rounds(diffs: np.ndarray) -> tuple[float, RowVariance]:
    """The 20%-trimmed mean of a paired row's round log ratios and the variance that gives its
    standard error over 1/R (Yuen 1974, one sample: (R−1)·s_w² / (h·(h−1)) with s_w² the winsorized
    variance and h = R − 2g rounds kept), on h − 1 degrees of freedom. In about one round in ten of
    the committed H200 ab invocations the two sides' workers ran 19–27% apart for the whole round
    although they took turns within milliseconds (a state of the process); trimming keeps such rounds
    from setting the row's interval. With fewer than TRIM_FROM_ROUNDS rounds nothing is trimmed (the
    plain mean and variance): too few are left to estimate a spread from."""
    rounds = len(diffs)
    g = int(ROUND_TRIM * rounds) if rounds >= TRIM_FROM_ROUNDS else 0
    if g == 0:
        return math.fsum(diffs.tolist()) / rounds, RowVariance.of(diffs)
    ordered = np.sort(diffs)
    kept = rounds - 2 * g
    center = math.fsum(ordered[g : rounds - g].tolist()) / kept
    winsorized = np.clip(ordered, ordered[g], ordered[rounds - g - 1])
    s_w2 = float(np.var(winsorized, ddof=1))
    return center, RowVariance(rounds * (rounds - 1) * s_w2 / (kept * (kept - 1)), kept - 1)


def fsum_mean(values: np.ndarray) -> float:
    """The mean, summed exactly (math.fsum)."""
    return math.fsum(values.tolist()) / len(values)
