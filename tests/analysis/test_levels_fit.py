"""The mixture fit behind the host levels: the one-component BIC in closed form against scikit-learn's
one-component fit, and the two-component fit with scikit-learn's checks skipped against the fit with
them, on varied synthetic log pass medians (levels at 0.1% to 30% spread, with and without a second
level)."""

import warnings

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

from launchbench.measure.levels import REG_COVAR, SEED, _two_components, one_component_bic, widest_gap_start


def _samples(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    drawn = []
    for i in range(60):
        n = int(rng.integers(4, 13))
        logs = rng.normal(-12.0, rng.choice([0.001, 0.02, 0.1, 0.3]), n)
        if i % 2:
            logs[: max(1, n // 3)] += rng.choice([0.05, 0.2, 0.5])
        drawn.append(logs)
    return drawn


def _sklearn_fit(logs: np.ndarray, components: int, **start: object) -> GaussianMixture:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return GaussianMixture(
            components,
            covariance_type="tied",
            reg_covar=REG_COVAR,
            random_state=SEED,
            init_params="random_from_data",
            **start,
        ).fit(logs.reshape(-1, 1))


@pytest.mark.parametrize("seed", [0, 1])
def test_the_closed_form_bic_is_scikit_learns_one_component_bic(seed):
    for logs in _samples(seed):
        expected = _sklearn_fit(logs, 1).bic(logs.reshape(-1, 1))
        assert one_component_bic(logs) == pytest.approx(expected, rel=1e-7, abs=1e-6)


@pytest.mark.parametrize("seed", [2, 3])
def test_the_fit_without_scikit_learns_checks_gives_the_checked_fits_answer(seed):
    for logs in _samples(seed):
        two = _sklearn_fit(logs, 2, **widest_gap_start(logs))
        data = logs.reshape(-1, 1)
        gain = _sklearn_fit(logs, 1).bic(data) - two.bic(data)
        labels, fitted_gain = _two_components(logs)
        assert labels.tolist() == two.predict(data).tolist()
        assert fitted_gain == pytest.approx(gain, rel=1e-7, abs=1e-6)
