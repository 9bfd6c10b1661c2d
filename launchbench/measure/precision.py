"""How precise a set of samples pins its median: a distribution-free confidence interval of the median
from order statistics (the ranks come from the binomial(n, 1/2) quantiles; see e.g. Conover, *Practical
Nonparametric Statistics*, 3rd ed., §3.2), and that interval's half-width relative to the median, which
the noise-target stopping rule (stopping.NoiseTarget) compares with its target."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np


def relative_half_width(median: float, low: float, high: float) -> float:
    """Half-width of an interval around ``median`` over the median (inf when the median is 0)."""
    return math.inf if median == 0 else (high - low) / 2 / abs(median)


def median_ci(samples: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics.

    With fewer than 6 samples no interval of 95% coverage exists between order statistics, so the
    whole range is returned.
    """
    values = np.sort(np.asarray(samples, dtype=float))
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    if n < 6:
        return (float(values[0]), float(values[-1]))
    alpha = 1 - confidence
    lower_rank = _binomial_half_quantile(alpha / 2, n)  # 1-based rank of the lower bound
    lower_rank = max(lower_rank, 1)
    upper_rank = n - lower_rank + 1
    return (float(values[lower_rank - 1]), float(values[upper_rank - 1]))


@lru_cache(maxsize=4096)
def _binomial_half_quantile(q: float, n: int) -> int:
    """The smallest k with P(Binomial(n, 1/2) ≤ k) ≥ q, in exact integer arithmetic (scipy.stats.binom.ppf
    without importing scipy.stats into every worker process)."""
    target = Fraction(q) * 2**n
    total, coefficient = 0, 1  # coefficient: C(n, k), carried from C(n, k - 1) exactly
    for k in range(n + 1):
        total += coefficient
        if total >= target:
            return k
        coefficient = coefficient * (n - k) // (k + 1)
    return n
