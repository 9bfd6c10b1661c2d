"""Pure statistics over timing samples (seconds in, seconds out).

Median confidence interval: measure/precision.py (the stopping rule uses it too).
Outliers: samples further than 3 scaled MADs from the median (Leys et al., 2013, "Detecting outliers:
do not use standard deviation around the mean, use absolute deviation around the median").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from launchbench.measure.precision import median_ci, relative_half_width

MAD_SCALE = 1.4826  # makes the MAD a consistent estimator of the standard deviation for normal data
OUTLIER_MADS = 3.0


@dataclass(frozen=True)
class Summary:
    median: float
    ci_low: float
    ci_high: float
    mean: float
    std: float
    mad: float
    p5: float
    p95: float
    n: int
    outliers: int

    @property
    def rel_ci(self) -> float:
        """Half-width of the median's 95% CI over the median: what the stopping rule targets."""
        return math.inf if self.n == 0 else relative_half_width(self.median, self.ci_low, self.ci_high)

    @property
    def rel_noise(self) -> float:
        """Robust coefficient of variation: scaled MAD over the median."""
        if self.n == 0 or self.median == 0:
            return math.inf
        return MAD_SCALE * self.mad / abs(self.median)

    def scaled(self, factor: float) -> Summary:
        """The same summary in other units (e.g. per launch instead of per iteration)."""
        return Summary(
            median=self.median * factor,
            ci_low=self.ci_low * factor,
            ci_high=self.ci_high * factor,
            mean=self.mean * factor,
            std=self.std * factor,
            mad=self.mad * factor,
            p5=self.p5 * factor,
            p95=self.p95 * factor,
            n=self.n,
            outliers=self.outliers,
        )

    def as_dict(self) -> dict[str, float]:
        out = asdict(self)
        out["rel_ci"] = self.rel_ci
        out["rel_noise"] = self.rel_noise
        return out


def outlier_mask(values: np.ndarray) -> np.ndarray:
    """The samples farther than OUTLIER_MADS scaled MADs from the median (none when the MAD is 0)."""
    values = np.asarray(values, dtype=float)
    deviation = np.abs(values - np.median(values))
    return _beyond(deviation, float(np.median(deviation)))


def _beyond(deviation: np.ndarray, mad: float) -> np.ndarray:
    """The samples whose absolute deviation from the median is over OUTLIER_MADS scaled MADs ``mad``."""
    if not mad > 0:
        return np.zeros(deviation.shape, dtype=bool)
    return deviation > OUTLIER_MADS * MAD_SCALE * mad


def sorted_median(ordered: np.ndarray) -> float:
    """Median of values already sorted (np.median's checks cost more than the sort on short passes)."""
    n = len(ordered)
    middle = n // 2
    return float(ordered[middle]) if n % 2 else 0.5 * (float(ordered[middle - 1]) + float(ordered[middle]))


def pass_medians(values: np.ndarray, pass_sizes: Sequence[int]) -> list[float]:
    """Median of each pass's slice of the pooled samples (slices in order; empty ones left out), each
    slice a list for ``statistics.median``: for passes of tens of samples several times quicker than
    NumPy's sort and its checks, and the same values."""
    pooled = np.asarray(values, dtype=float).tolist()
    bounds = np.cumsum([0, *pass_sizes]).tolist()
    slices = (pooled[a:b] for a, b in zip(bounds, bounds[1:]))
    return [statistics.median(chunk) for chunk in slices if chunk]


def usable_passes(pass_sizes: Sequence[int] | None, n: int) -> list[int] | None:
    """The non-empty pass sizes when there are at least two and they add up to the n samples; None
    (treat the samples as one pass) otherwise, e.g. a series that was not recorded in every pass."""
    if not pass_sizes:
        return None
    sizes = [int(s) for s in pass_sizes if s > 0]
    if len(sizes) < 2 or sum(sizes) != n:
        return None
    return sizes


def log_pass_medians(samples: np.ndarray, pass_sizes: Sequence[int] | None) -> np.ndarray | None:
    """Log of each pass's median (one pass when the sizes are unusable); None if a median is not positive."""
    sizes = usable_passes(pass_sizes, len(samples)) or [len(samples)]
    medians = np.array(pass_medians(np.asarray(samples, dtype=float), sizes))
    return np.log(medians) if len(medians) and np.all(medians > 0) else None


def summarize(samples: Sequence[float] | np.ndarray, pass_sizes: Sequence[int] | None = None) -> Summary:
    """Summary of pooled samples. With several passes, the median's CI is widened to cover every
    pass's median too, so drift between passes (another process on the host, a clock change) shows
    as uncertainty instead of hiding behind many samples of one moment."""
    values = np.asarray(samples, dtype=float)
    n = len(values)
    if n == 0:
        nan = math.nan
        return Summary(nan, nan, nan, nan, nan, nan, nan, nan, 0, 0)
    median = float(np.median(values))
    low, high = median_ci(values)
    sizes = usable_passes(pass_sizes, n)
    if sizes is not None:
        medians = pass_medians(values, sizes)
        if medians:
            low, high = min(low, *medians), max(high, *medians)
    deviation = np.abs(values - median)  # the median, MAD and percentiles each found once
    mad = float(np.median(deviation))
    p5, p95 = np.percentile(values, (5, 95))
    return Summary(
        median=median,
        ci_low=low,
        ci_high=high,
        mean=float(np.mean(values)),
        std=float(np.std(values, ddof=1)) if n > 1 else 0.0,
        mad=mad,
        p5=float(p5),
        p95=float(p95),
        n=n,
        outliers=int(np.count_nonzero(_beyond(deviation, mad))),
    )
