"""The host's drift: how far a host that changes speed states moves the rows bound by its launch cost.

A row whose launch loop keeps the CPU busy for most of its wall time (eager chains, a one-launch graph)
measures the host's launch cost, and on a VM host that cost changes with the host's speed state (on the
H200 machines here: 4.7 ↔ 6.5 µs per eager launch, states lasting 10–60 s). Five passes of one run may
all meet one state and agree closely, so a row's own spread understates where the next run can land.
The drift is therefore estimated from every host-bound row together: the variance of each row's log
pass medians about its own mean, pooled over the rows (one-way ANOVA's within-group mean square). Used
by results.csv (a host-bound row's CI is at least one pass's drift wide) and by compare (a difference
of two runs must exceed the drift of two single passes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from launchbench.analysis.stats import log_pass_medians
from launchbench.results.schema import MEASURED_STATUSES, CaseResult, RunRecord

HOST_BOUND_SHARE = 0.8  # CPU time at least 80% of the wall time: the row measures the host's launch cost
HOST_METRICS = frozenset({"cpu_us_per_launch", "cpu_us_per_iter"})  # the host's own time, in every row


@dataclass(frozen=True)
class HostDrift:
    """How far the host moved host-bound rows between passes, pooled over every such row of both runs
    (one metric): the variance of a row's log pass medians about the row's mean, and its degrees of
    freedom (passes minus rows)."""

    variance: float
    df: int

    def __post_init__(self) -> None:
        if self.df < 1:
            raise ValueError(f"host drift needs at least one degree of freedom, not {self.df}")

    def half_width(self, confidence: float = 0.95, passes: int = 1) -> float:
        """Half-width (in log units) of the t interval of one pass's log median (passes=1) or of the
        difference of two single passes (passes=2)."""
        return float(sps.t.ppf((1 + confidence) / 2, self.df)) * math.sqrt(passes * self.variance)


def is_host_bound(case: CaseResult, mode: str) -> bool:
    """The row's launch loop keeps the CPU busy for at least HOST_BOUND_SHARE of its wall time: its time
    is the host's launch cost, which moves with the host's speed state."""
    wall = case.metric_samples(mode, "wall_us_per_iter")
    cpu = case.metric_samples(mode, "cpu_us_per_iter")
    if len(wall) == 0 or len(cpu) == 0:
        return False
    wall_median = float(np.median(wall))
    return wall_median > 0 and float(np.median(cpu)) >= HOST_BOUND_SHARE * wall_median


def drift_applies(metric: str, host_bound: bool) -> bool:
    """Whether the host's drift bounds a metric's interval: every metric of a host-bound row, and the
    CPU-time metrics (the host's own time) of every row."""
    return host_bound or metric in HOST_METRICS


def host_drift(runs: Sequence[RunRecord], metrics: Sequence[str]) -> dict[str, HostDrift]:
    """Per metric, the variance of log pass medians about each row's mean, pooled over every host-bound
    row (measured in at least two passes) of the given runs. Passes of one run follow the host's speed
    state as a whole: a row whose passes all fell in one state has a small spread of its own, yet the
    other rows show how far the host moves, and that is what a difference between runs must exceed.
    A metric no host-bound row has two passes of is absent."""
    squares = dict.fromkeys(metrics, 0.0)
    dfs = dict.fromkeys(metrics, 0)
    for run in runs:
        for case in run.cases:
            for mode, result in case.modes.items():
                if result.status not in MEASURED_STATUSES or not is_host_bound(case, mode):
                    continue
                for metric in metrics:
                    logs = log_pass_medians(case.metric_samples(mode, metric), case.pass_sizes(mode))
                    if logs is not None and len(logs) >= 2:
                        squares[metric] += float(np.sum((logs - logs.mean()) ** 2))
                        dfs[metric] += len(logs) - 1
    return {metric: HostDrift(squares[metric] / dfs[metric], dfs[metric]) for metric in metrics if dfs[metric]}
