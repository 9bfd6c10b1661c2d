"""The median CI's order-statistic rank: exact, and cheap enough to find afresh at every sample count."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import pytest

from launchbench.measure.precision import _binomial_half_quantile


def by_binomial_sums(q: float, n: int) -> int:
    """The smallest k with P(Binomial(n, 1/2) <= k) >= q, each coefficient from math.comb."""
    target = Fraction(q) * 2**n
    total = 0
    for k in range(n + 1):
        total += math.comb(n, k)
        if total >= target:
            return k
    return n


@pytest.mark.parametrize("q", [0.005, 0.025, 0.05, 0.5])
def test_the_rank_is_the_exact_binomial_quantile(q: float) -> None:
    for n in [*range(6, 300), 511, 1000, 1999]:
        assert _binomial_half_quantile(q, n) == by_binomial_sums(q, n), n


def test_the_rank_at_thousands_of_samples_takes_milliseconds() -> None:
    _binomial_half_quantile.cache_clear()
    began = time.process_time()
    for n in range(4990, 5000):
        _binomial_half_quantile(0.025, n)
    assert time.process_time() - began < 0.5  # math.comb per coefficient: about 0.4 s for each n
