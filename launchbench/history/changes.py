"""Change points in a row's metric over runs.

The signal is one value per run: the mean of the log of the run's pass medians. Passes of one run
share the host's speed state (it lasts longer than a pass), so the run, not the pass and never the
raw sample, is the unit: a host that drifts between runs shows as run-to-run noise, which is what a
step has to exceed.

Detection (ruptures' PELT, Killick et al. 2012, least-squares cost on the signal divided by a robust
estimate of its run-to-run noise, BIC penalty 2·σ²·ln n) proposes candidate steps. Each candidate is
then confirmed with the runs as units, on the runs between its neighbouring candidates (the weakest
failing candidate is dropped and the rest tested again until all pass): the step (the
difference of mean log values after and before it) is at least ``threshold`` (5%, compare's default),
its confidence interval (Welch's t interval, exponentiated) lies on one side of 0, and a permutation
test says a step of that strength is unlikely anywhere in those runs by chance (p < alpha, 999
orderings; the statistic is the largest Student's t² over every split point, so the search that put
the candidate where the runs differ most is part of the null distribution, as in E-divisive). Host drift on host-bound rows (eager chains) makes their run-to-run noise large, so steps of
their size are proposed and then not confirmed; rows bound by the GPU keep a narrow noise and a step
of a few percent is found.

Each change names the run before and the run after it and the environment columns that differ
between those two runs ("driver 580.1 → 590.2"): an explanation, not a regression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures as rpt
from scipy import stats as sps

from launchbench.analysis.defaults import DEFAULT_ALPHA, DEFAULT_METRICS, DEFAULT_THRESHOLD
from launchbench.history.db import HistoryDB
from launchbench.history.matching import ALL_RUNS, RunFilter, RunInfo
from launchbench.history.query import RowSeries, pass_series
from launchbench.history.tables import ENV_COLUMN_LABELS, ENV_COLUMNS
from launchbench.history.trend import RowKey

MIN_SEGMENT = 2  # runs on each side of a step
NOISE_FLOOR = 1e-3  # log units: noise below 0.1% between runs is treated as 0.1%


@dataclass(frozen=True)
class EnvChange:
    column: str
    before: str
    after: str

    @property
    def text(self) -> str:
        return f"{ENV_COLUMN_LABELS[self.column]} {self.before} → {self.after}"


@dataclass(frozen=True)
class ChangePoint:
    scenario: str
    case: str
    mode: str
    metric: str
    before: RunInfo  # the last run before the step
    after: RunInfo  # the first run after it
    index: int  # position of ``after`` in the row's series (0-based)
    runs_before: int
    runs_after: int
    value_before: float  # geometric mean of the run values of each segment, in the metric's unit
    value_after: float
    step: float  # relative: value_after / value_before − 1
    step_ci_low: float
    step_ci_high: float
    p_value: float
    host_bound: bool
    env_changes: tuple[EnvChange, ...]

    @property
    def explanation(self) -> str:
        return ", ".join(c.text for c in self.env_changes)


def run_values(passes: Sequence[Sequence[float]]) -> tuple[np.ndarray, list[int]]:
    """Per run, the mean log pass median; and which runs (indices) had positive medians."""
    values, kept = [], []
    for i, medians in enumerate(passes):
        if medians and all(v > 0 for v in medians):
            values.append(float(np.mean(np.log(medians))))
            kept.append(i)
    return np.array(values), kept


def noise(values: np.ndarray) -> float:
    """Robust run-to-run standard deviation: scaled MAD of first differences over √2 (a step moves one
    difference only)."""
    if len(values) < 3:
        return NOISE_FLOOR
    diffs = np.diff(values)
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(1.4826 * mad / math.sqrt(2), NOISE_FLOOR)


def candidates(values: np.ndarray, min_size: int = MIN_SEGMENT) -> list[int]:
    """Indices where a new segment starts, proposed by PELT on the noise-scaled signal."""
    n = len(values)
    if n < 2 * min_size:
        return []
    scaled = (values / noise(values)).reshape(-1, 1)
    # PELT with the least-squares cost: KernelCPD's linear kernel is that cost, searched in C (rpt.Pelt's
    # l2 search in Python takes seconds for 1,000 runs; both give the same segments)
    detector = rpt.KernelCPD(kernel="linear", min_size=min_size, jump=1)
    ends = detector.fit(scaled).predict(pen=2 * math.log(n))
    return [int(e) for e in ends if e < n]


def welch_step(before: np.ndarray, after: np.ndarray, confidence: float) -> tuple[float, float, float, float]:
    """Difference of mean log values (after − before), its CI and Welch's p."""
    diff = float(after.mean() - before.mean())
    var_b, var_a = before.var(ddof=1) / len(before), after.var(ddof=1) / len(after)
    se = math.sqrt(var_b + var_a)
    floor = NOISE_FLOOR * math.sqrt(1 / len(before) + 1 / len(after))
    if se < floor:  # identical runs: no variance to speak of, keep the test defined
        se, df = floor, len(before) + len(after) - 2
    else:
        df = (var_b + var_a) ** 2 / (var_b**2 / (len(before) - 1) + var_a**2 / (len(after) - 1))
    t = diff / se
    p = float(2 * sps.t.sf(abs(t), df))
    half = float(sps.t.ppf((1 + confidence) / 2, df)) * se
    return diff, diff - half, diff + half, p


PERMUTATIONS = 999
PERMUTATION_CHUNK = 64


def _max_split_statistic(values: np.ndarray, min_size: int) -> np.ndarray:
    """For each row of ``values`` (runs in order), the largest two-sample statistic over the split points
    leaving ``min_size`` runs on each side: n₁n₂/n·(mean₁ − mean₂)² over the pooled variance (Student's t²).
    Computed in place over views of the running sums (the same operations in the same order as written
    out: (q₁ − s₁²/n₁) + (q₂ − s₂²/n₂), so the same floats)."""
    n = values.shape[1]
    n1 = np.arange(min_size, n - min_size + 1, dtype=np.float64)  # the split points k
    n2 = n - n1
    csum, csq = np.cumsum(values, axis=1), np.cumsum(np.square(values), axis=1)
    s1, q1 = csum[:, min_size - 1 : n - min_size], csq[:, min_size - 1 : n - min_size]  # through run k
    s2, q2 = csum[:, -1:] - s1, csq[:, -1:] - q1
    ss = np.square(s1)
    ss /= n1
    np.subtract(q1, ss, out=ss)
    right = np.square(s2)
    right /= n2
    np.subtract(q2, right, out=right)
    ss += right
    ss /= n - 2
    pooled = np.maximum(ss, NOISE_FLOOR**2, out=ss)
    diff = s1 / n1
    s2 /= n2
    diff -= s2
    np.square(diff, out=diff)
    diff *= n1 * n2 / n
    diff /= pooled
    return np.max(diff, axis=1)


def permutation_p(
    segment: np.ndarray, min_size: int = MIN_SEGMENT, permutations: int = PERMUTATIONS, seed: int = 0
) -> float:
    """p-value of a step anywhere in ``segment``: the largest split statistic against its distribution over
    random orderings of the same runs. Taking the largest over every split point is what keeps a step
    that detection placed where the runs happen to differ most from looking significant by that choice."""
    rng = np.random.default_rng(seed)
    observed = _max_split_statistic(segment[None, :], min_size)[0]
    exceeded = 0
    # orderings drawn in chunks (the same orderings as all at once) into one buffer: memory stays small
    # over 1,000 runs
    tiled = np.tile(segment, (PERMUTATION_CHUNK, 1))
    buffer = np.empty_like(tiled)
    for done in range(0, permutations, PERMUTATION_CHUNK):
        rows = min(PERMUTATION_CHUNK, permutations - done)
        null = _max_split_statistic(rng.permuted(tiled[:rows], axis=1, out=buffer[:rows]), min_size)
        exceeded += int(np.sum(null >= observed * (1 - 1e-12)))
    return float((1 + exceeded) / (1 + permutations))


def env_changes(before: RunInfo, after: RunInfo) -> tuple[EnvChange, ...]:
    return tuple(
        EnvChange(column, str(before.env[column]), str(after.env[column]))
        for column in ENV_COLUMNS
        if before.env[column] != after.env[column]
    )


@dataclass(frozen=True)
class _Test:
    start: int
    diff: float
    low: float
    high: float
    p: float

    def confirmed(self, threshold: float, alpha: float) -> bool:
        return abs(math.expm1(self.diff)) >= threshold and not self.low <= 0 <= self.high and self.p < alpha


def _test(values: np.ndarray, segment: tuple[int, int, int], threshold: float, confidence: float) -> _Test:
    """The step at ``start`` tested on the runs from ``lo`` up to ``hi``: Welch's CI, then (when the step
    is large enough to count) the permutation p."""
    lo, start, hi = segment
    diff, low, high, _ = welch_step(values[lo:start], values[start:hi], confidence)
    p = permutation_p(values[lo:hi]) if abs(math.expm1(diff)) >= threshold else 1.0
    return _Test(start, diff, low, high, p)


def confirm(
    values: np.ndarray, starts: list[int], threshold: float, alpha: float, confidence: float
) -> list[_Test]:
    """Test every candidate against the runs up to its neighbours; drop the weakest one that fails and
    test again, until every candidate left is confirmed (a spurious candidate next to a real step would
    otherwise leave the real one too few runs to be confirmed)."""
    starts = list(starts)
    known: dict[tuple[int, int, int], _Test] = {}  # a candidate whose neighbours stay is not tested again
    while starts:
        bounds = [0, *starts, len(values)]
        tests = []
        for j, start in enumerate(starts):
            segment = (bounds[j], start, bounds[j + 2])
            if segment not in known:
                known[segment] = _test(values, segment, threshold, confidence)
            tests.append(known[segment])
        failed = [t for t in tests if not t.confirmed(threshold, alpha)]
        if not failed:
            return tests
        weakest = max(failed, key=lambda t: (t.p, -abs(t.diff)))
        starts.remove(weakest.start)
    return []


def row_changes(
    series: RowSeries,
    metric: str,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = 0.95,
) -> list[ChangePoint]:
    """The confirmed change points of one row's metric."""
    values, kept = run_values(series.metric_passes(metric))
    tests = confirm(values, candidates(values), threshold, alpha, confidence)
    bounds = [0, *(t.start for t in tests), len(values)]
    out = []
    for j, test in enumerate(tests):
        before, after = values[bounds[j] : test.start], values[test.start : bounds[j + 2]]
        run_before, run_after = series.runs[kept[test.start - 1]], series.runs[kept[test.start]]
        scenario, case, mode = series.key
        out.append(
            ChangePoint(
                scenario,
                case,
                mode,
                metric,
                run_before,
                run_after,
                kept[test.start],
                len(before),
                len(after),
                math.exp(before.mean()),
                math.exp(after.mean()),
                math.expm1(test.diff),
                math.expm1(test.low),
                math.expm1(test.high),
                test.p,
                any(series.host_bound),
                env_changes(run_before, run_after),
            )
        )
    return out


def detect_changes(
    db: HistoryDB,
    filters: RunFilter = ALL_RUNS,
    metrics: Sequence[str] = DEFAULT_METRICS,
    keys: Sequence[RowKey] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    alpha: float = DEFAULT_ALPHA,
) -> list[ChangePoint]:
    """Change points of every row (or the given rows) and metric over the matching runs."""
    out = []
    for series in pass_series(db, filters, keys):
        for metric in metrics:
            out.extend(row_changes(series, metric, threshold, alpha))
    return out
