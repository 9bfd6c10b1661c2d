"""drift.py and results.csv: row variances shrunk toward rows of their kind (empirical Bayes)."""

import math

import numpy as np
import pytest
from builders import make_run

from launchbench.analysis.drift import NoisePrior, RowVariance, fit_prior, fit_priors, is_host_bound
from launchbench.analysis.table import run_table


def test_host_bound_rows_are_eager_and_the_one_launch_graph():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.35))
    bound = {(c.case_id, mode) for c in run.cases for mode in c.modes if is_host_bound(c, mode)}
    assert {key for key in bound if key[1] == "graph"} == {("empty/length=1", "graph")}
    assert {c.case_id for c in run.cases} == {key[0] for key in bound if key[1] == "eager"}


def test_row_variance_pools_groups():
    a, b = np.array([0.0, 0.2, 0.4]), np.array([1.0, 1.2])
    row = RowVariance.of(a, b)
    assert row.df == 3
    assert row.variance == pytest.approx((0.08 + 0.02) / 3)
    assert RowVariance.of(np.array([1.0])).df == 0 and math.isnan(RowVariance.of(np.array([1.0])).variance)


def test_prior_recovers_a_known_scaled_inverse_chi_square():
    """Row variances drawn from s0² = 0.01 on d0 = 10 (each row's true variance), each seen on 4 df:
    the moment estimate lands near both."""
    rng = np.random.default_rng(5)
    true = 0.01 * 10 / rng.chisquare(10, 4000)
    seen = true * rng.chisquare(4, 4000) / 4
    prior = fit_prior(RowVariance(float(v), 4) for v in seen)
    assert prior is not None
    assert prior.variance == pytest.approx(0.01, rel=0.1)
    assert prior.df == pytest.approx(10, rel=0.3)


def test_moderation_and_fallbacks():
    prior = NoisePrior(0.04, 4.0)
    assert prior.moderate(RowVariance(0.01, 4)) == (pytest.approx(0.025), 8.0)
    assert prior.moderate(RowVariance(math.nan, 0)) == (0.04, 4.0)
    assert NoisePrior(0.04, math.inf).moderate(RowVariance(0.01, 4)) == (0.04, math.inf)
    assert fit_prior([RowVariance(0.01, 4)] * 2) is None  # too few rows
    rows = {
        ("m", True): [RowVariance(0.01, 4)],
        ("m", False): [RowVariance(v, 4) for v in (0.01, 0.02, 0.03)],
    }
    priors = fit_priors(rows)
    assert priors[("m", True)] == priors[("m", False)] == fit_prior(
        [*rows[("m", True)], *rows[("m", False)]]
    ) or (priors[("m", False)] == fit_prior(rows[("m", False)]))


def test_results_csv_ci_covers_the_rows_pass_noise():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.35))
    table = run_table(run).set_index(["case", "mode"])
    eager = table.loc[("empty/length=100", "eager")]
    assert bool(eager["host_bound"])
    assert eager["wall_us_per_launch_ci_high"] / eager["wall_us_per_launch_ci_low"] > 1.3  # a 35% pass
    graph = table.loc[("empty/length=1000", "graph")]
    assert not bool(graph["host_bound"])
    assert graph["wall_us_per_launch_ci_high"] / graph["wall_us_per_launch_ci_low"] < 1.05


def test_a_steady_host_barely_widens_anything():
    run = make_run(seed=0, passes=3, eager_drift=(1.0, 1.0, 1.0))
    table = run_table(run)
    eager = table[table["mode"] == "eager"]
    assert (eager["wall_us_per_launch_ci_high"] / eager["wall_us_per_launch_ci_low"] < 1.1).all()


@pytest.mark.parametrize("y", [1e-9, 1e-6, 3e-4, 0.01, 0.3, 1.0, 4.2, 100.0, 1e4, 1e6, 1e7, 5e8])
def test_trigamma_inverse_solves_trigamma_and_agrees_with_a_bracketing_root_finder(y: float) -> None:
    """x with trigamma(x) = y, to within 1e-12 of y where Newton's steps are taken (1e-6 ≤ y ≤ 1e7), to the
    asymptotes' accuracy outside; within scipy.optimize.brentq's own tolerance of its root inside."""
    from scipy import optimize, special

    from launchbench.analysis.drift import _trigamma_inverse

    x = _trigamma_inverse(y)
    reached = float(special.polygamma(1, x))
    if 1e-6 <= y <= 1e7:
        assert reached == pytest.approx(y, rel=1e-12)
        upper = 1.0
        while special.polygamma(1, upper) > y:
            upper *= 2
        root = optimize.brentq(
            lambda v: float(special.polygamma(1, v)) - y, 1e-12, upper, xtol=1e-14, rtol=1e-14
        )
        assert x == pytest.approx(root, rel=1e-9)
    else:
        assert reached == pytest.approx(y, rel=1e-3)
