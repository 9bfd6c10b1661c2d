"""When to stop sampling: the median's 95% CI is within the noise target, after a minimum number of
samples, or the time budget or sample cap is spent (nvbench-style pluggable criteria, in one rule)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from launchbench.measure.precision import median_ci, relative_half_width


@dataclass(frozen=True)
class StopRule:
    target_noise: float
    min_samples: int
    max_samples: int

    def precise_enough(self, samples: Sequence[float]) -> bool:
        """True once the median's CI half-width is within target_noise of the median."""
        if len(samples) < self.min_samples:
            return False
        return relative_half_width(float(np.median(samples)), *median_ci(samples)) <= self.target_noise

    def full(self, samples: Sequence[float]) -> bool:
        return len(samples) >= self.max_samples
