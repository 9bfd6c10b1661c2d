"""The host levels' mixture fit: one or two Gaussian components sharing one variance, on the logs of a
row's pass medians (a handful of values), fitted as scikit-learn's ``GaussianMixture`` fits them with
``covariance_type="tied"``, a given start and its defaults (``tol=1e-3``, ``max_iter=100``,
``n_init=1``), in NumPy: the same EM steps in the same order, stopped by the same test, so each value
gets the same component and the BIC the same value. With scikit-learn 1.9.1 and the one-component BIC
in SciPy's expression, the gain BIC(one) − BIC(two) and the components are the old scikit-learn code's
to the last bit on 1,200 random draws and on 3,458 of the 3,460 committed rows that reach the fit;
tests/analysis/test_levels_fit.py and test_levels_shortcut.py check both against scikit-learn's fit,
within 1e-7 of the BIC. Written here rather than called because importing scikit-learn took 0.8–1.8 s
on the H100 host, and the quickstart's first case waited for it; a fit of ten values takes about
0.2 ms. Never prints."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TOL = 1e-3  # GaussianMixture's default: stop once the mean log-likelihood moves less than this
MAX_ITER = 100  # GaussianMixture's default
_LOG_2PI = math.log(2 * math.pi)
_LOG_ROOT_TWO_PI = float(np.log(np.sqrt(2 * np.pi)))  # scipy.stats' _norm_pdf_logC
_EPS = 10 * np.finfo(np.float64).eps  # added to each component's weight sum, as scikit-learn does


@dataclass(frozen=True)
class TwoComponents:
    """A fitted two-component mixture: each value's likelier component (0 or 1, in the start's order)
    and the fit's BIC."""

    labels: np.ndarray
    bic: float


def one_component_bic(values: np.ndarray, reg_covar: float) -> float:
    """The BIC of one Gaussian fitted to ``values`` (mean and variance, plus ``reg_covar``): the first
    M-step of any start, so the fit itself; two parameters. The log density is
    ``scipy.stats.norm.logpdf``'s expression, term for term (the same value to the last bit)."""
    variance = float(np.var(values)) + reg_covar
    loc, scale = float(np.mean(values)), np.asarray(math.sqrt(variance))
    standard = np.asarray((values - loc) / scale, dtype=np.float64)
    log_density = (-(standard**2) / 2.0 - _LOG_ROOT_TWO_PI) - np.log(scale)
    return -2 * float(np.sum(log_density)) + 2 * math.log(len(values))


def fit_two(
    values: np.ndarray,
    weights: np.ndarray,
    means: np.ndarray,
    precision: float,
    reg_covar: float,
    max_iter: int = MAX_ITER,
) -> TwoComponents:
    """Two components sharing one variance, fitted by EM from ``weights``, ``means`` and the shared
    ``precision`` (1 / variance), at most ``max_iter`` steps; each value's component under the fit and
    its BIC (four parameters: one weight, two means, the variance)."""
    x = np.asarray(values, dtype=np.float64)
    weights, means = np.asarray(weights, dtype=np.float64), np.asarray(means, dtype=np.float64)
    precision_chol = math.sqrt(precision)
    lower_bound = -math.inf
    for _ in range(max_iter):
        previous = lower_bound
        log_norm, log_resp = _e_step(x, weights, means, precision_chol)
        weights, means, precision_chol = _m_step(x, np.exp(log_resp), reg_covar)
        lower_bound = float(np.mean(log_norm))
        if abs(lower_bound - previous) < TOL:
            break
    weighted = _weighted_log_prob(x, weights, means, precision_chol)
    score = float(np.mean(_logsumexp_rows(weighted)))
    return TwoComponents(np.argmax(weighted, axis=1), -2 * score * len(x) + 4 * math.log(len(x)))


def _weighted_log_prob(
    x: np.ndarray, weights: np.ndarray, means: np.ndarray, precision_chol: float
) -> np.ndarray:
    """Each value's log density under each component, plus the component's log weight: (n, 2)."""
    squared = np.square(x[:, None] * precision_chol - means[None, :] * precision_chol)
    return -0.5 * (_LOG_2PI + squared) + math.log(precision_chol) + np.log(weights)[None, :]


def _logsumexp_rows(a: np.ndarray) -> np.ndarray:
    """log Σ exp over each row, as scikit-learn 1.9 computes it (its ``_logsumexp``: the largest term
    set apart, the rest through ``log1p``), so the fit's BIC is scikit-learn's to the last bit there."""
    top = np.max(a, axis=1, keepdims=True)
    at_top = a == top
    rest = np.where(at_top, -np.inf, a)
    count = np.sum(at_top, axis=1, keepdims=True, dtype=a.dtype)
    total = np.sum(np.exp(rest - np.where(np.isfinite(top), top, 0)), axis=1, keepdims=True)
    total = np.where(total == 0, total, total / count)
    return (np.log1p(total) + np.log(count) + top)[:, 0]


def _e_step(
    x: np.ndarray, weights: np.ndarray, means: np.ndarray, precision_chol: float
) -> tuple[np.ndarray, np.ndarray]:
    """Each value's log-likelihood under the mixture and its log responsibilities."""
    weighted = _weighted_log_prob(x, weights, means, precision_chol)
    log_norm = _logsumexp_rows(weighted)
    return log_norm, weighted - log_norm[:, None]


def _m_step(x: np.ndarray, resp: np.ndarray, reg_covar: float) -> tuple[np.ndarray, np.ndarray, float]:
    """The weights, means and shared precision's square root the responsibilities give (the products
    taken as scikit-learn takes them, on a column of values, for the same rounding)."""
    column = x[:, None]
    counts = resp.sum(axis=0) + _EPS
    means = (resp.T @ column) / counts[:, None]
    variance = float(((column.T @ column) - (counts * means.T) @ means)[0, 0]) / float(np.sum(counts))
    return counts / np.sum(counts), means[:, 0], 1.0 / math.sqrt(variance + reg_covar)
