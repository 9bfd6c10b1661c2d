"""How precise a set of samples pins its median: a distribution-free confidence interval of the median
from order statistics (the ranks come from the binomial(n, 1/2) quantiles; see e.g. Conover, *Practical
Nonparametric Statistics*, 3rd ed., §3.2), and that interval's half-width relative to the median, which
the stopping rule compares with its noise target."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sps


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
    lower_rank = int(sps.binom.ppf(alpha / 2, n, 0.5))  # 1-based rank of the lower bound
    lower_rank = max(lower_rank, 1)
    upper_rank = n - lower_rank + 1
    return (float(values[lower_rank - 1]), float(values[upper_rank - 1]))
