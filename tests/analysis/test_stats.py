import math

import numpy as np
import pytest

from launchbench.analysis.stats import summarize
from launchbench.measure.precision import median_ci


def test_summary_of_known_samples():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median == 3.0
    assert s.n == 5
    assert s.mad == 1.0
    assert s.outliers == 1  # 100 is far beyond 3 scaled MADs
    assert s.mean == pytest.approx(22.0)
    assert s.p5 == pytest.approx(np.percentile([1, 2, 3, 4, 100], 5))


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    hits = 0
    trials = 400
    for _ in range(trials):
        sample = rng.lognormal(0.0, 0.5, 40)
        low, high = median_ci(sample)
        hits += low <= 1.0 <= high  # the lognormal(0, σ) median is 1
    assert 0.92 <= hits / trials <= 0.995


def test_median_ci_ranks_match_the_binomial():
    from scipy import stats as sps  # here, not at collection: each xdist worker collects every module

    values = np.arange(1, 101, dtype=float)
    low, high = median_ci(values)
    k = int(sps.binom.ppf(0.025, 100, 0.5))
    assert (low, high) == (float(k), float(101 - k))


def test_small_and_empty_samples():
    assert median_ci([3.0, 1.0]) == (1.0, 3.0)
    empty = summarize([])
    assert empty.n == 0 and math.isnan(empty.median) and math.isinf(empty.rel_ci)


def test_relative_measures_and_scaling():
    s = summarize([10.0, 10.0, 11.0, 9.0, 10.0, 10.0, 10.0])
    assert s.rel_noise == pytest.approx(0.0)
    scaled = s.scaled(1e6)
    assert scaled.median == 1e7 and scaled.n == s.n
    assert scaled.rel_ci == pytest.approx(s.rel_ci)


def test_drift_between_passes_widens_the_median_ci():
    rng = np.random.default_rng(3)
    fast = rng.normal(4.7, 0.05, 200)
    slow = rng.normal(6.5, 0.05, 100)
    pooled = np.concatenate([fast, slow])
    narrow = summarize(pooled)
    wide = summarize(pooled, pass_sizes=[100, 100, 100])
    assert narrow.ci_high < 5.0  # many samples of a moment: a tight, overconfident interval
    assert wide.ci_low <= 4.7 and wide.ci_high >= 6.4  # every pass's median is inside
    assert wide.median == narrow.median
