"""Compare two runs: rows aligned on (scenario, case, mode), per metric the ratio of medians with a
bootstrap confidence interval, a Mann–Whitney U test on the raw samples, and a verdict.

Verdict of one metric of one row (``threshold`` is a relative change, 5% unless configured; "CI" is
the confidence interval of the change, ratio − 1):

==============================================================  =========================================
significant (Mann–Whitney p < alpha), change ≥ thr, CI above 0   ``slower``
significant, change ≤ −thr, CI below 0                           ``faster``
|change| ≥ thr otherwise (not significant, or CI includes 0)     ``uncertain`` (drift or too few samples)
|change| < thr, CI inside ±thr                                   ``same`` (significant or not)
|change| < thr, CI reaching beyond ±thr                          ``uncertain`` (more samples or passes)
==============================================================  =========================================

Mann–Whitney sees every sample as independent, so with hundreds of samples it calls any drift of the
host significant. The CI is what carries drift: with several passes (``ModeResult.pass_sizes``) it
comes from a two-stage bootstrap that resamples passes as well as samples, widened to cover the
classical t interval with passes as the units (below), so a row whose passes disagree (a VM host
switching speed states) gets a CI as wide as that disagreement, and a change no larger than it comes
out ``uncertain``, never ``slower`` or ``faster``.

Rows present on one side only get ``missing``; rows whose status is neither ``ok`` nor ``budget`` on
either side get ``failed``. Nothing here prints or exits; a different GPU model raises
DifferentGpuError (a LaunchbenchError: exit 2 in the CLI).

The confidence interval of the ratio of medians is a seeded percentile bootstrap, the two runs
resampled independently. How one side's median is resampled:

* one pass: the bootstrap distribution of the median is drawn exactly from order statistics instead
  of by resampling (the median of a resample of n values is its ⌈n/2⌉-th order statistic, and the
  number of resampled values at or below the k-th smallest one is binomial(n, k/n); Efron &
  Tibshirani, *An Introduction to the Bootstrap*, 1993, §2 and problem 2.4). O(n) per side.
* several passes: a hierarchical (two-stage) bootstrap (Davison & Hinkley, *Bootstrap Methods and
  their Application*, 1997, §3.8): stage 1 draws P passes with replacement out of the P; stage 2
  resamples each drawn pass's own samples (as many as it has) and takes the median of the pool. Given
  stage 1's draw, the number of pooled values at or below a value v is a sum of independent binomials
  (one per pass, n = its samples × times drawn, p = the pass's share of values ≤ v), so stage 2's
  median is drawn from that count's distribution, by a refined normal approximation (continuity and
  skewness corrections; Volkova, "A refinement of the central limit theorem for sums of
  independent random indicators", *Theory Probab. Appl.*, 1996) instead of by drawing samples. A
  draw of stage 1 costs O(n) once per distinct multiset of passes (10 for 3 passes), not per resample.

For an even count, the two middle order statistics are drawn with the same uniform (a slightly
conservative approximation). Both ways agree with brute-force resampling to well within the CI's
own noise (tests/test_compare.py checks), and a quickstart comparison takes well under a second.

With few passes, a bootstrap over passes covers drift poorly: with 3 passes a side, a resample made
of one pass only is a 1-in-27 draw, so the 2.5% tails barely reach the extreme passes. When either
side has several passes, the interval is therefore widened to cover the two-sample t interval of the
difference of the mean log pass medians, variance pooled over both runs' passes (P_b + P_c − 2
degrees of freedom): passes of the same host drift alike, so drift seen in one run counts for both.
On the real back-to-back H200 runs (tests/data/h200/quickstart-a, -b) the bootstrap alone called the
latency of four rows slower (+39% to +195%: run b's first passes met a slow host state that run a
never did); covering the t interval makes them uncertain, while rows whose passes agree keep an
interval as narrow as the bootstrap's. The t interval is placed around both the mean difference of
log pass medians and the log ratio of pooled medians (their hull), so it always contains the ratio
the row reports.

Host-bound rows. A row whose CPU time per iteration is at least 80% of its wall time (eager chains, a
one-launch graph) measures the host's launch cost, and the host's speed state lasts longer than a
pass: five passes of one run may all fall in its slow state and agree closely with each other (seen on
the H200: every pass of one run at 6.4–7.1 µs per launch, another run's at 4.8–6.6). Their spread
then understates how far the next run can land. So the drift of the host is estimated from every
host-bound row of both runs together (the variance of each row's log pass medians about its own
mean, pooled: HostDrift), and a host-bound row's interval (and the CPU-time metric of every row) is
at least as wide as the t interval of the difference of two single passes with that variance. On a
quiet host that floor is a percent or two; on the H200 machines here it was 14–18% (standard
deviation), which keeps eager rows of back-to-back runs out of "slower" and "faster" while graph rows
bound by the GPU keep their own narrow intervals (and a 10% longer chain is flagged on them).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import special
from scipy import stats as sps

from launchbench.analysis.drift import HostDrift, drift_applies, host_drift, is_host_bound
from launchbench.analysis.stats import log_pass_medians, usable_passes
from launchbench.errors import LaunchbenchError
from launchbench.results.environment import ENV_ITEMS, ENV_LABELS, UNKNOWN, summarize_environment
from launchbench.results.schema import MEASURED_STATUSES, METRIC_BY_NAME, CaseResult, ModeResult, RunRecord

Verdict = Literal["faster", "slower", "same", "uncertain", "missing", "failed"]
VERDICTS: tuple[Verdict, ...] = ("slower", "faster", "uncertain", "same", "missing", "failed")

DEFAULT_METRICS: tuple[str, ...] = (
    "wall_us_per_launch",
    "wall_us_per_iter",
    "cpu_us_per_launch",
    "gpu_us_per_iter",
    "latency_us",
)
DEFAULT_THRESHOLD = 0.05
DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 4000
COMPARABLE_STATUSES = MEASURED_STATUSES

RowKey = tuple[str, str, str]  # (scenario, case, mode)


class DifferentGpuError(LaunchbenchError):
    """The two runs were taken on different GPU models."""


class CompareSettingsError(LaunchbenchError):
    """A metric name or threshold that cannot be used."""


@dataclass(frozen=True)
class CompareSettings:
    """What to compare and how strict to be. Thresholds are relative changes (0.05 = 5%)."""

    metrics: tuple[str, ...] = DEFAULT_METRICS
    default_threshold: float = DEFAULT_THRESHOLD
    thresholds: Mapping[str, float] = field(default_factory=dict)
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def __post_init__(self) -> None:
        unknown = [m for m in (*self.metrics, *self.thresholds) if m not in METRIC_BY_NAME]
        if unknown:
            raise CompareSettingsError(f"unknown metric {unknown[0]!r}; metrics: {', '.join(METRIC_BY_NAME)}")
        if not self.metrics:
            raise CompareSettingsError("no metric to compare")
        if not 0 < self.alpha < 1:
            raise CompareSettingsError(f"alpha must be between 0 and 1, not {self.alpha}")
        if not 0 < self.confidence < 1:
            raise CompareSettingsError(f"confidence must be between 0 and 1, not {self.confidence}")
        if any(t < 0 for t in (self.default_threshold, *self.thresholds.values())):
            raise CompareSettingsError("thresholds must not be negative")
        if self.resamples < 100:
            raise CompareSettingsError("at least 100 bootstrap resamples are needed")

    def threshold(self, metric: str) -> float:
        return self.thresholds.get(metric, self.default_threshold)


def parse_threshold(text: str) -> tuple[str | None, float]:
    """``latency_us:10%`` → ("latency_us", 0.10); ``10%`` → (None, 0.10): the default for every metric."""
    metric, sep, amount = text.rpartition(":")
    amount = amount.strip()
    if not amount.endswith("%"):
        raise CompareSettingsError(f"threshold {text!r}: give a percentage, e.g. latency_us:10% or 10%")
    try:
        value = float(amount[:-1]) / 100
    except ValueError:
        raise CompareSettingsError(f"threshold {text!r}: {amount!r} is not a number followed by %") from None
    if not math.isfinite(value) or value < 0:
        raise CompareSettingsError(f"threshold {text!r}: must be a non-negative percentage")
    name = metric.strip() if sep else None
    if name is not None and name not in METRIC_BY_NAME:
        raise CompareSettingsError(f"threshold {text!r}: unknown metric {name!r}; metrics: {', '.join(METRIC_BY_NAME)}")
    return name, value


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one row. Medians in the metric's unit (µs); change = ratio − 1."""

    metric: str
    verdict: Verdict
    baseline_median: float = math.nan
    current_median: float = math.nan
    ratio: float = math.nan
    ratio_ci_low: float = math.nan
    ratio_ci_high: float = math.nan
    p_value: float = math.nan
    significant: bool = False
    threshold: float = DEFAULT_THRESHOLD
    n_baseline: int = 0
    n_current: int = 0
    passes_baseline: int = 1
    passes_current: int = 1
    detail: str = ""

    @property
    def change(self) -> float:
        return self.ratio - 1

    @property
    def change_ci(self) -> tuple[float, float]:
        return (self.ratio_ci_low - 1, self.ratio_ci_high - 1)

    @property
    def delta(self) -> float:
        """current − baseline median, in the metric's unit (µs)."""
        return self.current_median - self.baseline_median

    @property
    def compared(self) -> bool:
        return self.verdict not in ("missing", "failed")


@dataclass(frozen=True)
class RowComparison:
    scenario: str
    case: str
    mode: str
    baseline_status: str | None
    current_status: str | None
    metrics: tuple[MetricComparison, ...]
    detail: str = ""

    @property
    def key(self) -> RowKey:
        return (self.scenario, self.case, self.mode)

    @property
    def label(self) -> str:
        return f"{self.scenario}/{self.case} [{self.mode}]"

    @property
    def comparable(self) -> bool:
        return self.baseline_status in COMPARABLE_STATUSES and self.current_status in COMPARABLE_STATUSES

    @property
    def only_in(self) -> Literal["baseline", "current"] | None:
        if self.current_status is None:
            return "baseline"
        if self.baseline_status is None:
            return "current"
        return None

    def metric(self, name: str) -> MetricComparison | None:
        return next((m for m in self.metrics if m.metric == name), None)


@dataclass(frozen=True)
class EnvDifference:
    item: str
    baseline: str
    current: str




@dataclass(frozen=True)
class Comparison:
    baseline_label: str
    current_label: str
    baseline_env: Mapping[str, str]
    current_env: Mapping[str, str]
    settings: CompareSettings
    rows: tuple[RowComparison, ...]

    @property
    def env_differences(self) -> tuple[EnvDifference, ...]:
        return tuple(
            EnvDifference(ENV_LABELS[item], self.baseline_env[item], self.current_env[item])
            for item in ENV_ITEMS
            if self.baseline_env[item] != self.current_env[item]
        )

    @property
    def different_gpu(self) -> bool:
        return gpu_models_differ(self.baseline_env["gpu"], self.current_env["gpu"])

    def counts(self, metric: str | None = None) -> dict[Verdict, int]:
        """How many (row, metric) pairs got each verdict (of one metric, or of all)."""
        out: dict[Verdict, int] = dict.fromkeys(VERDICTS, 0)
        for row in self.rows:
            for m in row.metrics:
                if metric is None or m.metric == metric:
                    out[m.verdict] += 1
        return out

    def only_in(self, side: Literal["baseline", "current"]) -> tuple[RowComparison, ...]:
        return tuple(r for r in self.rows if r.only_in == side)


# ---------------------------------------------------------------------------------------------- stats


def bootstrap_medians(samples: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Draws from the bootstrap distribution of the sample median (exact, from order statistics)."""
    values = np.sort(np.asarray(samples, dtype=float))
    n = len(values)
    u = rng.random(resamples)
    probs = np.arange(1, n + 1) / n

    def order_statistic(rank: int) -> np.ndarray:
        cdf = sps.binom.sf(rank - 1, n, probs)  # P(resample's rank-th smallest ≤ values[k])
        cdf[-1] = 1.0
        return values[np.minimum(np.searchsorted(cdf, u, side="left"), n - 1)]

    if n % 2:
        return order_statistic((n + 1) // 2)
    return 0.5 * (order_statistic(n // 2) + order_statistic(n // 2 + 1))


_SQRT_2PI = math.sqrt(2 * math.pi)


def _count_at_least(rank: np.ndarray, mean: np.ndarray, var: np.ndarray, third: np.ndarray) -> np.ndarray:
    """P(C ≥ rank) for C a sum of independent binomials with the given mean, variance and third central
    moment: refined normal approximation with continuity correction (Volkova 1996). ``rank`` is a
    column (one per pool), the moments are (pool, value) arrays."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (rank - 0.5 - mean) / np.sqrt(var)
        skew = third / var**1.5
        below = special.ndtr(x) + skew / 6 * (1 - x * x) * np.exp(-0.5 * x * x) / _SQRT_2PI
    return np.where(var > 0, 1 - np.clip(below, 0.0, 1.0), (mean >= rank).astype(float))


def bootstrap_pooled_medians(
    samples: np.ndarray, pass_sizes: Sequence[int], resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws from the two-stage bootstrap distribution of the median of samples pooled over passes:
    passes resampled with replacement, then each chosen pass's samples (see the module docstring).
    ``samples`` holds the passes' samples one pass after the other, ``pass_sizes`` how many each has."""
    values = np.asarray(samples, dtype=float)
    sizes_list = usable_passes(pass_sizes, len(values))
    if sizes_list is None:
        return bootstrap_medians(values, resamples, rng)
    sizes = np.asarray(sizes_list, dtype=np.int64)
    p, n = len(sizes), len(values)
    # stage 1: each resample draws p passes with replacement; only how often each pass is drawn matters
    picks = rng.integers(0, p, size=(resamples, p))
    times = (picks[:, :, None] == np.arange(p)).sum(axis=1)  # (resamples, p)
    _, first, pool = np.unique(times, axis=0, return_index=True, return_inverse=True)  # the distinct multisets
    pool = pool.reshape(-1)
    u = rng.random(resamples)

    # stage 2, per distinct pool (multiset of passes): the count of pooled values ≤ each value
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    labels = np.repeat(np.arange(p), sizes)[order]
    last_tie = np.searchsorted(ordered, ordered, side="right") - 1
    share = np.cumsum(labels[:, None] == np.arange(p), axis=0)[last_tie] / sizes  # (n, p): pass's share ≤ value
    counts = times[first] * sizes  # (pools, p): samples each pass contributes to the pool
    mean = counts @ share.T
    var = counts @ (share * (1 - share)).T
    third = counts @ (share * (1 - share) * (1 - 2 * share)).T
    total = counts.sum(axis=1)[:, None]
    offsets = 2.0 * np.arange(len(first))  # one searchsorted over every pool's CDF laid end to end
    middle = []
    for rank in ((total + 1) // 2, total // 2 + 1):
        cdf = np.maximum.accumulate(_count_at_least(rank, mean, var, third), axis=1)  # P(rank-th ≤ value)
        cdf[:, -1] = 1.0
        flat = (cdf + offsets[:, None]).ravel()
        index = np.searchsorted(flat, u + offsets[pool], side="left") - pool * n
        middle.append(ordered[np.clip(index, 0, n - 1)])
    return 0.5 * (middle[0] + middle[1])


def pass_level_ratio_ci(
    baseline: np.ndarray,
    current: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    baseline_passes: Sequence[int] | None = None,
    current_passes: Sequence[int] | None = None,
    host_drift: HostDrift | None = None,
) -> tuple[float, float] | None:
    """The classical two-sample t interval of the ratio, with passes as the units: its half-width from
    the log of each pass's median, variance pooled over both runs' passes (P_b + P_c − 2 degrees of
    freedom), around both the mean difference of log pass medians and the log ratio of the pooled
    medians (their hull). With ``host_drift`` (a host-bound row or
    metric) the half-width is at least that of the difference of two single passes of the host-bound
    rows' pooled variance. None when there is no degree of freedom (one pass on each side) or a median
    is not positive."""
    log_b, log_c = log_pass_medians(baseline, baseline_passes), log_pass_medians(current, current_passes)
    if log_b is None or log_c is None:
        return None
    df = len(log_b) + len(log_c) - 2
    if df < 1:
        return None
    pooled = (np.sum((log_b - log_b.mean()) ** 2) + np.sum((log_c - log_c.mean()) ** 2)) / df
    half = float(sps.t.ppf((1 + confidence) / 2, df)) * math.sqrt(pooled * (1 / len(log_b) + 1 / len(log_c)))
    if host_drift is not None:
        # the passes of one run are not independent draws of the host's state (a state lasts 10–60 s, a
        # run a minute): the two runs may differ by as much as two single passes can
        host_half = host_drift.half_width(confidence, passes=2)
        half = max(half, host_half)
    # around the mean log pass-median difference and around the ratio of pooled medians that compare
    # reports (the two part when a few passes are extreme; a CI that misses its own estimate misleads)
    b_median, c_median = float(np.median(baseline)), float(np.median(current))
    if b_median <= 0 or c_median <= 0:
        return None
    centers = (float(log_c.mean() - log_b.mean()), math.log(c_median / b_median))
    return (math.exp(min(centers) - half), math.exp(max(centers) + half))


def ratio_of_medians_ci(
    baseline: np.ndarray,
    current: np.ndarray,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    baseline_passes: Sequence[int] | None = None,
    current_passes: Sequence[int] | None = None,
    host_drift: HostDrift | None = None,
) -> tuple[float, float]:
    """CI of median(current) / median(baseline); the two sides are independent.

    A percentile bootstrap; a side with pass sizes (≥ 2 passes) is resampled in two stages, passes
    then samples. When either side has several passes the interval is widened to cover the pass-level
    t interval too (pass_level_ratio_ci): with three passes a side, the bootstrap's tails are the
    1-in-27 draws of one pass three times, too few to cover drift between passes reliably."""
    rng = np.random.default_rng(seed)
    base = bootstrap_pooled_medians(baseline, baseline_passes or (), resamples, rng)
    cur = bootstrap_pooled_medians(current, current_passes or (), resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = cur / base
    if not np.all(np.isfinite(ratios)):
        return (math.nan, math.nan)
    tail = (1 - confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    if usable_passes(baseline_passes, len(baseline)) or usable_passes(current_passes, len(current)):
        classical = pass_level_ratio_ci(baseline, current, confidence, baseline_passes, current_passes, host_drift)
        if classical is not None:
            low, high = min(low, classical[0]), max(high, classical[1])
    return (low, high)


def mann_whitney_p(baseline: np.ndarray, current: np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value; 1.0 where the test is undefined (e.g. every value equal)."""
    if len(baseline) == 0 or len(current) == 0:
        return math.nan
    p = float(sps.mannwhitneyu(baseline, current, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def decide(significant: bool, change: float, change_ci: tuple[float, float], threshold: float) -> Verdict:
    """The verdict rules (see the module docstring). ``change`` and its CI are relative (0.1 = +10%).

    A direction needs all three: Mann–Whitney significance, |change| ≥ threshold, and a CI on that
    side of 0. The CI carries the drift between passes that the pooled Mann–Whitney test cannot see.
    """
    low, high = change_ci
    if math.isnan(change) or math.isnan(low) or math.isnan(high):
        return "uncertain"
    if abs(change) >= threshold:
        if significant and change > 0 and low > 0:
            return "slower"
        if significant and change < 0 and high < 0:
            return "faster"
        return "uncertain"
    if -threshold <= low and high <= threshold:
        return "same"
    return "uncertain"


# ------------------------------------------------------------------------------------------ alignment


def compare_samples(
    metric: str,
    baseline: np.ndarray,
    current: np.ndarray,
    settings: CompareSettings,
    baseline_passes: Sequence[int] | None = None,
    current_passes: Sequence[int] | None = None,
    host_drift: HostDrift | None = None,
) -> MetricComparison:
    """Compare the raw samples of one metric (in its unit) of one row. ``*_passes``: how many samples
    each pass contributed, in order (None or fewer than two passes: one pass). ``host_drift``: for a
    host-bound row, the drift between passes that every host-bound row of the two runs shows."""
    threshold = settings.threshold(metric)
    nb, nc = len(baseline), len(current)
    b_passes, c_passes = usable_passes(baseline_passes, nb), usable_passes(current_passes, nc)
    pb, pc = len(b_passes) if b_passes else 1, len(c_passes) if c_passes else 1
    if nb == 0 or nc == 0:
        side = "baseline" if nb == 0 else "current"
        return MetricComparison(
            metric, "missing", threshold=threshold, n_baseline=nb, n_current=nc, detail=f"no samples in {side}"
        )
    b_med, c_med = float(np.median(baseline)), float(np.median(current))
    ratio = c_med / b_med if b_med > 0 else math.nan
    low, high = ratio_of_medians_ci(
        baseline, current, settings.confidence, settings.resamples, settings.seed, b_passes, c_passes, host_drift
    )
    p = mann_whitney_p(baseline, current)
    significant = p < settings.alpha
    verdict = decide(significant, ratio - 1, (low - 1, high - 1), threshold)
    detail = "" if b_med > 0 else "baseline median is not positive; no ratio"
    return MetricComparison(
        metric=metric,
        verdict=verdict,
        baseline_median=b_med,
        current_median=c_med,
        ratio=ratio,
        ratio_ci_low=low,
        ratio_ci_high=high,
        p_value=p,
        significant=significant,
        threshold=threshold,
        n_baseline=nb,
        n_current=nc,
        passes_baseline=pb,
        passes_current=pc,
        detail=detail,
    )


def _describe(status: str | None, result: ModeResult | None, case: CaseResult | None) -> str:
    if status is None:
        return "absent"
    reason = (result.reason if result else None) or (case.error if case else None)
    return f"{status} ({reason})" if reason else status


def _rows(run: RunRecord) -> dict[RowKey, tuple[CaseResult, ModeResult]]:
    return {(case.scenario, case.case_id, mode): (case, result) for case in run.cases for mode, result in case.modes.items()}


def compare_row(
    key: RowKey,
    baseline: tuple[CaseResult, ModeResult] | None,
    current: tuple[CaseResult, ModeResult] | None,
    settings: CompareSettings,
    host_drift: Mapping[str, HostDrift] | None = None,
) -> RowComparison:
    """One row's metrics; ``host_drift`` (per metric) applies when the row is host-bound on either side."""
    scenario, case_id, mode = key
    b_case, b_result = baseline if baseline else (None, None)
    c_case, c_result = current if current else (None, None)
    b_status = b_result.status if b_result else None
    c_status = c_result.status if c_result else None

    def same_verdict(verdict: Verdict, detail: str) -> RowComparison:
        metrics = tuple(
            MetricComparison(m, verdict, threshold=settings.threshold(m), detail=detail) for m in settings.metrics
        )
        return RowComparison(scenario, case_id, mode, b_status, c_status, metrics, detail)

    if b_case is None or c_case is None:
        return same_verdict("missing", f"only in {'current' if b_case is None else 'baseline'}")
    if b_status not in COMPARABLE_STATUSES or c_status not in COMPARABLE_STATUSES:
        detail = f"baseline: {_describe(b_status, b_result, b_case)}; current: {_describe(c_status, c_result, c_case)}"
        return same_verdict("failed", detail)
    b_passes, c_passes = b_case.pass_sizes(mode), c_case.pass_sizes(mode)
    drift = host_drift or {}
    host_bound = is_host_bound(b_case, mode) or is_host_bound(c_case, mode)
    metrics = tuple(
        compare_samples(
            m, b_case.metric_samples(mode, m), c_case.metric_samples(mode, m), settings, b_passes, c_passes,
            drift.get(m) if drift_applies(m, host_bound) else None,
        )
        for m in settings.metrics
    )
    detail = ""
    if b_case.launches_per_iter != c_case.launches_per_iter:
        detail = f"launches per iteration differ: {b_case.launches_per_iter} → {c_case.launches_per_iter}"
    return RowComparison(scenario, case_id, mode, b_status, c_status, metrics, detail)


def align(baseline: Mapping[RowKey, object], current: Mapping[RowKey, object]) -> list[RowKey]:
    """Row keys in baseline order, then the rows only the current run has (in its order)."""
    return list(baseline) + [k for k in current if k not in baseline]


# ---------------------------------------------------------------------------------------- environment


def gpu_models_differ(baseline: str, current: str) -> bool:
    """True when both GPU names are known and name different models (case and spacing ignored)."""
    if UNKNOWN in (baseline, current):
        return False
    return " ".join(baseline.lower().split()) != " ".join(current.lower().split())


# ----------------------------------------------------------------------------------------------- entry


def compare_runs(
    baseline: RunRecord,
    current: RunRecord,
    settings: CompareSettings | None = None,
    *,
    allow_different_gpu: bool = False,
    baseline_label: str = "baseline",
    current_label: str = "current",
) -> Comparison:
    """Align two runs and compare every metric of every row. Raises DifferentGpuError when the GPU
    models differ and ``allow_different_gpu`` is false."""
    settings = settings or CompareSettings()
    b_env, c_env = summarize_environment(baseline.environment), summarize_environment(current.environment)
    if gpu_models_differ(b_env["gpu"], c_env["gpu"]) and not allow_different_gpu:
        raise DifferentGpuError(
            f"the runs were taken on different GPU models: {baseline_label} on {b_env['gpu']!r}, "
            f"{current_label} on {c_env['gpu']!r}; their timings are not comparable "
            "(pass --allow-different-gpu to compare them anyway)"
        )
    b_rows, c_rows = _rows(baseline), _rows(current)
    drift = host_drift((baseline, current), settings.metrics)
    rows = tuple(
        compare_row(key, b_rows.get(key), c_rows.get(key), settings, drift) for key in align(b_rows, c_rows)
    )
    return Comparison(baseline_label, current_label, b_env, c_env, settings, rows)
