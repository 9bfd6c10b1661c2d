"""scikit-learn's GaussianMixture, the reference launchbench.measure.mixture is held to: the same fits
(one variance shared by the components, the start at the widest gap) made by scikit-learn itself.
scikit-learn is imported at the first fit, not when a test module imports this one (about 0.5 s of an
xdist worker's collection otherwise)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from launchbench.measure.levels import REG_COVAR, widest_gap_start

# scikit-learn's covariance step (the mean square less the squared mean) loses about eight digits to
# cancellation on logs near -12 spread by 0.1%, so two fits that differ only in rounding (its log-sum-exp
# is not NumPy's) agree to about 1e-8 of the BIC: the tolerance of every comparison with these fits
CLOSE = {"rel": 1e-7, "abs": 1e-6}


def sklearn_fit(logs: np.ndarray, components: int, **start: object) -> Any:
    """scikit-learn's fitted GaussianMixture of ``components`` components (its own checks of finite
    values and fixed parameters skipped: they cost more than a fit of ten points and test nothing here)."""
    import sklearn
    from sklearn.mixture import GaussianMixture

    with (
        warnings.catch_warnings(),
        sklearn.config_context(assume_finite=True, skip_parameter_validation=True),
    ):
        warnings.simplefilter("ignore")  # convergence notes on a handful of points
        return GaussianMixture(
            components,
            covariance_type="tied",
            reg_covar=REG_COVAR,
            random_state=0,
            init_params="random_from_data",
            **start,
        ).fit(logs.reshape(-1, 1))


def sklearn_two(logs: np.ndarray) -> tuple[list[int], float]:
    """Each value's component under scikit-learn's two-component fit from the widest-gap start, and
    that fit's BIC."""
    start = widest_gap_start(logs)
    two = sklearn_fit(
        logs,
        2,
        weights_init=start.weights,
        means_init=start.means.reshape(-1, 1),
        precisions_init=np.array([[start.precision]]),
    )
    data = logs.reshape(-1, 1)
    return two.predict(data).tolist(), float(two.bic(data))


def sklearn_labels_and_gain(logs: np.ndarray) -> tuple[list[int], float]:
    """sklearn_two's components, and BIC(one component) − BIC(two), both by scikit-learn."""
    labels, two_bic = sklearn_two(logs)
    return labels, float(sklearn_fit(logs, 1).bic(logs.reshape(-1, 1))) - two_bic
