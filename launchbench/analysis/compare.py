"""Compare two runs: rows aligned on (scenario, case, mode); per metric the change of the median, its
confidence interval, a test, the smallest change the row could have shown (MDE), and a verdict.

The unit of inference is the pass (a fresh worker process): samples inside one pass share one host
state and are not independent, so no test here treats raw samples as independent draws.

Separate runs (``compare_runs``), per row and metric: the log of each pass's median on each side; the
change is estimated by the difference of the sides' mean log pass medians, its standard error by the
row's own pooled between-pass variance, shrunk toward the variance of rows of its kind (an
empirical-Bayes prior over the rows of both runs; launchbench.analysis.drift and docs/statistics.md).
The interval is the t interval on the moderated degrees of freedom, placed around both that estimate
and the log ratio of the pooled medians that the row reports (their hull), so it always holds the
reported ratio. The p value is the moderated t test of a zero change.

Paired runs (``compare_paired``, ``launchbench ab``): the two variants were measured interleaved,
round by round, seconds apart; per row and metric the log ratio of B's to A's pass median in each
round, their mean (the reported ratio is its exponential), and a t interval over rounds with the same
shrinkage of the rounds' variance. What both sides share in a round (the host's state) cancels.

Rows measured in one pass on both sides have no between-pass evidence: their interval is the exact
bootstrap of the ratio of sample medians (order statistics; Efron & Tibshirani 1993, §2 and problem
2.4), which cannot see drift between runs, and they get no p value.

Verdict of one metric of one row (``threshold`` is a relative change, 5% unless configured; "CI" is
the confidence interval of the change, ratio − 1; "significant" is p < alpha, 0.01 unless configured,
or for one-pass rows the CI excluding 0):

==============================================================  =========================================
significant, change ≥ thr, CI above 0                            ``slower``
significant, change ≤ −thr, CI below 0                           ``faster``
|change| ≥ thr otherwise                                         ``uncertain``
|change| < thr, CI inside ±thr                                   ``same``
|change| < thr, CI reaching beyond ±thr                          ``uncertain`` (more passes, or ``ab``)
==============================================================  =========================================

MDE (minimum detectable effect): the relative change the row's test detects with probability POWER
(80%) at level alpha, exp((t₁₋α/₂ + t_power)·SE) − 1 on the row's moderated degrees of freedom. A gate
rule tighter than a row's MDE cannot fail on that row; the gate says so (launchbench.analysis.gate).

Host levels (launchbench.measure.levels): where either side's pass medians sit at two levels, the
row-metric's ``levels`` says so, and whether the sides mix the
levels differently, in which case the verdict may reflect the level shares rather than a change.

Rows present on one side only get ``missing``; rows whose status is neither ``ok`` nor ``budget`` on
either side get ``failed``. Nothing here prints or exits; a different GPU model raises
DifferentGpuError (a LaunchbenchError: exit 2 in the CLI).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import special
from scipy import stats as sps

from launchbench.analysis.defaults import COMPARED_METRICS, DEFAULT_ALPHA, DEFAULT_THRESHOLD
from launchbench.analysis.drift import HOST_BOUND_SHARE, NoisePrior, RowVariance, fit_priors, stratum
from launchbench.analysis.host_levels import comparison_note
from launchbench.analysis.stats import log_pass_medians, sorted_median, usable_passes
from launchbench.errors import LaunchbenchError
from launchbench.measure.levels import find_levels
from launchbench.results.environment import (
    ENV_ITEMS,
    ENV_LABELS,
    HOST_ITEMS,
    UNKNOWN,
    items_differ,
    summarize_environment,
)
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    MEASURED_STATUSES,
    METRIC_BY_NAME,
    WALL,
    CaseResult,
    ModeResult,
    RunRecord,
)

Verdict = Literal["faster", "slower", "same", "uncertain", "missing", "failed"]
VERDICTS: tuple[Verdict, ...] = ("slower", "faster", "uncertain", "same", "missing", "failed")

HOST_SHIFT_MIN_ROWS = 3  # host-bound rows needed to estimate their common shift between separate runs
HOST_SHIFT_NOTE = 0.02  # a common shift this large (in log units) is named in the report
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 4000
POWER = 0.8  # the MDE is the change detected with this probability
COMPARABLE_STATUSES = MEASURED_STATUSES

RowKey = tuple[str, str, str]  # (scenario, case, mode)


class DifferentGpuError(LaunchbenchError):
    """The two runs were taken on different GPU models."""


class CompareSettingsError(LaunchbenchError):
    """A metric name or threshold that cannot be used."""


@dataclass(frozen=True)
class CompareSettings:
    """What to compare and how strict to be. Thresholds are relative changes (0.05 = 5%)."""

    metrics: tuple[str, ...] = COMPARED_METRICS
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
        raise CompareSettingsError(
            f"threshold {text!r}: unknown metric {name!r}; metrics: {', '.join(METRIC_BY_NAME)}"
        )
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
    mde: float = math.nan  # relative change this row's test detects with probability POWER
    detail: str = ""
    levels: str = ""  # the sides' host levels where either is at two (host_levels.comparison_note)

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
    host_bound: bool = False  # the host's launch cost sets its time (RowSeries.host_bound, either side)
    disturbed: int = 0  # passes of either side measured in a disturbed state (their canary moved)

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
    paired: bool = False  # interleaved rounds of one invocation (launchbench ab), not separate runs
    host_shifts: Mapping[str, float] = field(default_factory=dict)  # see host_shifts; separate runs only
    warnings: tuple[str, ...] = ()  # what the caller found about the runs (unfinished, scenario file changed)

    @property
    def method_note(self) -> str:
        """One sentence on how the verdicts were reached, for the renderers' footnotes."""
        unit = "interleaved rounds (B/A ratio per round)" if self.paired else "passes (log pass medians)"
        return (
            f"slower/faster: a t test over {unit} with p < {self.settings.alpha:g} (p adjusted over the rows"
            " of each metric, Benjamini–Hochberg), |change| ≥ threshold and the"
            " 95% CI of the change on that side of 0; each row's variance is its own, shrunk toward rows of its kind;"
            " MDE: the change detectable with 80% power"
        ) + self.host_shift_note

    @property
    def host_shift_note(self) -> str:
        """For separate runs whose host-bound rows moved together: by how much, and what was done."""
        moved = {m: v for m, v in self.host_shifts.items() if abs(v) >= HOST_SHIFT_NOTE}
        if not moved:
            return ""
        shifts = ", ".join(f"{m} {math.expm1(v):+.1%}" for m, v in moved.items())
        return (
            f". Host-bound rows moved together beyond GPU-bound rows ({shifts}): counted as run-to-run"
            " host noise in their intervals; `launchbench ab` measures both sides in the same seconds"
        )

    @property
    def env_differences(self) -> tuple[EnvDifference, ...]:
        return tuple(
            EnvDifference(ENV_LABELS[item], self.baseline_env[item], self.current_env[item])
            for item in ENV_ITEMS
            if items_differ(item, self.baseline_env, self.current_env)
        )

    @property
    def host_doubt(self) -> str:
        """Where an item that moves the host's launch cost differs (Python, CPU model, cuda-bindings,
        CuPy): which host-bound rows that puts in doubt; '' where none differs."""
        changed = [
            ENV_LABELS[i]
            for i in ENV_ITEMS
            if i in HOST_ITEMS and items_differ(i, self.baseline_env, self.current_env)
        ]
        rows = [r.label for r in self.rows if r.host_bound and r.only_in is None]
        if not changed or not rows:
            return ""
        shown = ", ".join(rows[:5]) + (f" and {len(rows) - 5} more" if len(rows) > 5 else "")
        return (
            f"{' and '.join(changed)} differ: the {len(rows)} host-bound rows ({shown}) may show the host's"
            " change rather than the code's"
        )

    @property
    def all_warnings(self) -> tuple[str, ...]:
        """The caller's warnings and the host-bound rows in doubt, for every output."""
        return (*self.warnings, *([self.host_doubt] if self.host_doubt else []))

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


@dataclass(frozen=True)
class Inference:
    """What a row's evidence says about log(current / baseline)."""

    ratio_ci: tuple[float, float]
    p_value: float
    significant: bool
    mde: float


def t_inference(
    centers: Sequence[float], se: float, df: float, confidence: float, alpha: float, power: float = POWER
) -> Inference:
    """t interval of a log change with standard error ``se`` on ``df`` degrees of freedom, placed around
    every one of ``centers`` (the first is the tested estimate); the two-sided p value of a zero change;
    the MDE at level ``alpha`` and ``power``."""
    estimate = centers[0]
    half = float(special.stdtrit(df, (1 + confidence) / 2)) * se  # the t quantile (scipy's fast ufunc)
    no_spread = 0.0 if estimate != 0 else 1.0
    p = float(2 * special.stdtr(df, -abs(estimate) / se)) if se > 0 else no_spread
    mde = math.expm1((float(special.stdtrit(df, 1 - alpha / 2)) + float(special.stdtrit(df, power))) * se)
    return Inference((math.exp(min(centers) - half), math.exp(max(centers) + half)), p, p < alpha, mde)


def bootstrap_inference(
    baseline: np.ndarray, current: np.ndarray, settings: CompareSettings, power: float = POWER
) -> Inference:
    """One pass a side: the exact bootstrap of the ratio of sample medians; no p value (samples of one
    pass are not independent draws), significant when the CI excludes 1; the MDE from the CI's width."""
    rng = np.random.default_rng(settings.seed)
    base = bootstrap_medians(baseline, settings.resamples, rng)
    cur = bootstrap_medians(current, settings.resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = cur / base
    if not np.all(np.isfinite(ratios)) or np.any(ratios <= 0):
        return Inference((math.nan, math.nan), math.nan, False, math.nan)
    tail = (1 - settings.confidence) / 2 * 100
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    z = float(sps.norm.ppf((1 + settings.confidence) / 2))
    se = math.log(high / low) / (2 * z)
    mde = math.expm1((float(sps.norm.ppf(1 - settings.alpha / 2)) + float(sps.norm.ppf(power))) * se)
    return Inference((low, high), math.nan, low > 1 or high < 1, mde)


def decide(significant: bool, change: float, change_ci: tuple[float, float], threshold: float) -> Verdict:
    """The verdict rules (see the module docstring). ``change`` and its CI are relative (0.1 = +10%).

    A direction needs all three: significance (p < alpha), |change| ≥ threshold, and a CI on that side
    of 0."""
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


# ------------------------------------------------------------------------------------------- evidence


@dataclass(frozen=True)
class LogEvidence:
    """A row-metric's evidence on log(current / baseline) at the level of passes (or paired rounds):
    the estimate (first of ``centers``; the others are where the interval must reach too), the row's
    own variance of its units, and the factor from that variance to the estimate's (1/P_b + 1/P_c, or
    1/rounds)."""

    centers: tuple[float, ...]
    own: RowVariance
    scale: float
    units: tuple[int, int]  # passes (or rounds) on each side


def log_evidence(
    baseline: np.ndarray,
    current: np.ndarray,
    baseline_passes: Sequence[int] | None,
    current_passes: Sequence[int] | None,
    paired: bool = False,
) -> LogEvidence | None:
    """The evidence of one metric of one row, or None when a median is not positive or there is no
    sample. Paired: round k is pass k of both sides (rounds beyond the shorter side are left out)."""
    if len(baseline) == 0 or len(current) == 0:
        return None
    log_b, log_c = log_pass_medians(baseline, baseline_passes), log_pass_medians(current, current_passes)
    medians = (sorted_median(np.sort(baseline)), sorted_median(np.sort(current)))
    return evidence_of(log_b, log_c, medians, paired)


def evidence_of(
    log_b: np.ndarray | None, log_c: np.ndarray | None, medians: tuple[float, float], paired: bool
) -> LogEvidence | None:
    """log_evidence from each side's log pass medians and pooled median."""
    if log_b is None or log_c is None or not (medians[0] > 0 and medians[1] > 0):
        return None
    if paired:
        rounds = min(len(log_b), len(log_c))
        center, variance = trimmed_rounds(log_c[:rounds] - log_b[:rounds])
        return LogEvidence((center,), variance, 1 / rounds, (rounds, rounds))
    centers = (_mean(log_c) - _mean(log_b), math.log(medians[1] / medians[0]))
    scale = 1 / len(log_b) + 1 / len(log_c)
    return LogEvidence(centers, RowVariance.of(log_b, log_c), scale, (len(log_b), len(log_c)))


ROUND_TRIM = 0.2  # share of a paired row's rounds trimmed from each end ...
TRIM_FROM_ROUNDS = 10  # ... once it has at least this many rounds (ab's default)


def trimmed_rounds(diffs: np.ndarray) -> tuple[float, RowVariance]:
    """The 20%-trimmed mean of a paired row's round log ratios and the variance that gives its
    standard error over 1/R (Yuen 1974, one sample: (R−1)·s_w² / (h·(h−1)) with s_w² the winsorized
    variance and h = R − 2g rounds kept), on h − 1 degrees of freedom. In about one round in ten of
    the committed H200 ab invocations the two sides' workers ran 19–27% apart for the whole round
    although they took turns within milliseconds (a state of the process); trimming keeps such rounds
    from setting the row's interval. With fewer than TRIM_FROM_ROUNDS rounds nothing is trimmed (the
    plain mean and variance): too few are left to estimate a spread from."""
    rounds = len(diffs)
    g = int(ROUND_TRIM * rounds) if rounds >= TRIM_FROM_ROUNDS else 0
    if g == 0:
        return math.fsum(diffs.tolist()) / rounds, RowVariance.of(diffs)
    ordered = np.sort(diffs)
    kept = rounds - 2 * g
    center = math.fsum(ordered[g : rounds - g].tolist()) / kept
    winsorized = np.clip(ordered, ordered[g], ordered[rounds - g - 1])
    s_w2 = float(np.var(winsorized, ddof=1))
    return center, RowVariance(rounds * (rounds - 1) * s_w2 / (kept * (kept - 1)), kept - 1)


def _mean(values: np.ndarray) -> float:
    return math.fsum(values.tolist()) / len(values)


class RowSeries:
    """One side of one row, each raw series read and summarised once: samples (seconds), pass sizes, log
    pass medians and pooled median. Metrics that share a series differ only by a scale factor."""

    def __init__(self, case: CaseResult, mode: str):
        self.case, self.mode = case, mode
        self.sizes = case.pass_sizes(mode)
        self._cache: dict[str, tuple[np.ndarray, np.ndarray | None, float]] = {}

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        if key not in self._cache:
            samples = self.case.samples(self.mode, key)
            logs = log_pass_medians(samples, self.sizes) if len(samples) else None
            median = sorted_median(np.sort(samples)) if len(samples) else math.nan
            self._cache[key] = (samples, logs, median)
        return self._cache[key]

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        """Samples, log pass medians and median of a metric, in its unit."""
        metric = METRIC_BY_NAME[name]
        samples, logs, median = self.series(metric.sample_key)
        scale = metric.scale(self.case.launches_per_iter)
        return samples * scale, None if logs is None else logs + math.log(scale), median * scale

    @property
    def host_bound(self) -> bool:
        wall, cpu = self.series(WALL)[2], self.series(CPU)[2]
        return wall > 0 and cpu >= HOST_BOUND_SHARE * wall

    def host_paced(self, metric: str) -> bool:
        """Whether the host's speed sets this metric of this row: every metric of a host-bound row, CPU
        time always, and the latency (launch, run and synchronize one iteration) when the GPU's own
        time is less than half of it (the rest is the host's launch and wake-up)."""
        if self.host_bound:
            return True
        if METRIC_BY_NAME[metric].sample_key == LATENCY:
            latency, gpu = self.series(LATENCY)[2], self.series(GPU)[2]
            if latency > 0 and gpu > 0:
                return gpu < 0.5 * latency
        return stratum(metric, self.host_bound)[1]


def infer(
    evidence: LogEvidence | None,
    prior: NoisePrior | None,
    baseline: np.ndarray,
    current: np.ndarray,
    settings: CompareSettings,
    run_noise: float = 0.0,
) -> Inference:
    """The t inference on the row's moderated variance (plus ``run_noise``², a run-to-run component in
    log units); the samples' bootstrap when the row has no between-pass variance and no prior to borrow
    one from."""
    if evidence is not None and (evidence.own.df >= 1 or prior is not None):
        variance, df = (
            prior.moderate(evidence.own) if prior is not None else (evidence.own.variance, evidence.own.df)
        )
        if math.isfinite(variance) and df >= 1:
            return t_inference(
                evidence.centers,
                math.sqrt(variance * evidence.scale + run_noise**2),
                df,
                settings.confidence,
                settings.alpha,
            )
    return bootstrap_inference(baseline, current, settings)


def compare_samples(
    metric: str,
    baseline: np.ndarray,
    current: np.ndarray,
    settings: CompareSettings,
    baseline_passes: Sequence[int] | None = None,
    current_passes: Sequence[int] | None = None,
    prior: NoisePrior | None = None,
    paired: bool = False,
    evidence: LogEvidence | None = None,
    medians: tuple[float, float] | None = None,
    run_noise: float = 0.0,
) -> MetricComparison:
    """Compare the raw samples of one metric (in its unit) of one row. ``*_passes``: how many samples
    each pass contributed, in order (None or fewer than two passes: one pass). ``prior``: the noise of
    rows of this row's kind (drift.fit_priors), toward which the row's own variance is shrunk.
    ``paired``: pass k of both sides is one interleaved round. ``evidence``: log_evidence of these
    samples, and ``medians`` their pooled medians, when the caller has them already. ``run_noise``: a
    run-to-run component of the log change's standard error (see host_shifts)."""
    threshold = settings.threshold(metric)
    nb, nc = len(baseline), len(current)
    b_passes, c_passes = usable_passes(baseline_passes, nb), usable_passes(current_passes, nc)
    pb, pc = len(b_passes) if b_passes else 1, len(c_passes) if c_passes else 1
    counts: dict[str, Any] = {"threshold": threshold, "n_baseline": nb, "n_current": nc}
    if nb == 0 or nc == 0:
        side = "baseline" if nb == 0 else "current"
        return MetricComparison(metric, "missing", **counts, detail=f"no samples in {side}")
    counts |= {"passes_baseline": pb, "passes_current": pc}
    b_med, c_med = medians or (sorted_median(np.sort(baseline)), sorted_median(np.sort(current)))
    if not (b_med > 0 and c_med > 0):
        return MetricComparison(
            metric, "uncertain", b_med, c_med, **counts, detail="a median is not positive; no ratio"
        )
    evidence = evidence or log_evidence(baseline, current, b_passes, c_passes, paired)
    inference = infer(evidence, prior, baseline, current, settings, run_noise)
    ratio = math.exp(evidence.centers[0]) if paired and evidence is not None else c_med / b_med
    low, high = inference.ratio_ci
    return MetricComparison(
        metric=metric,
        verdict=decide(inference.significant, ratio - 1, (low - 1, high - 1), threshold),
        baseline_median=b_med,
        current_median=c_med,
        ratio=ratio,
        ratio_ci_low=low,
        ratio_ci_high=high,
        p_value=inference.p_value,
        significant=inference.significant,
        mde=inference.mde,
        **counts,
    )


# ------------------------------------------------------------------------------------------ alignment


def _describe(status: str | None, result: ModeResult | None, case: CaseResult | None) -> str:
    if status is None:
        return "absent"
    reason = (result.reason if result else None) or (case.error if case else None)
    return f"{status} ({reason})" if reason else status


def _rows(run: RunRecord) -> dict[RowKey, tuple[CaseResult, ModeResult]]:
    return {
        (case.scenario, case.case_id, mode): (case, result)
        for case in run.cases
        for mode, result in case.modes.items()
    }


Priors = Mapping[tuple[str, bool], NoisePrior]
Side = tuple[CaseResult, ModeResult]


def compare_row(
    key: RowKey,
    baseline: Side | None,
    current: Side | None,
    settings: CompareSettings,
    priors: Priors | None = None,
    paired: bool = False,
    series: tuple[RowSeries, RowSeries] | None = None,
    shifts: Mapping[str, float] | None = None,
) -> RowComparison:
    """One row's metrics; ``priors`` (per drift.stratum) moderate each metric's variance; ``series``:
    the two sides' RowSeries when the caller made them already; ``shifts``: per metric, the common
    shift of host-bound rows (host_shifts), a run-to-run component of a host-bound row's error."""
    scenario, case_id, mode = key
    b_case, b_result = baseline if baseline else (None, None)
    c_case, c_result = current if current else (None, None)
    b_status = b_result.status if b_result else None
    c_status = c_result.status if c_result else None
    disturbed = sum(r.disturbed_passes for r in (b_result, c_result) if r is not None)

    def same_verdict(verdict: Verdict, detail: str) -> RowComparison:
        metrics = tuple(
            MetricComparison(m, verdict, threshold=settings.threshold(m), detail=detail)
            for m in settings.metrics
        )
        measured = [
            RowSeries(case, mode).host_bound
            for case, status in ((b_case, b_status), (c_case, c_status))
            if case is not None and status in COMPARABLE_STATUSES
        ]
        return RowComparison(
            scenario, case_id, mode, b_status, c_status, metrics, detail, any(measured), disturbed
        )

    if b_case is None or c_case is None:
        return same_verdict("missing", f"only in {'current' if b_case is None else 'baseline'}")
    if b_status not in COMPARABLE_STATUSES or c_status not in COMPARABLE_STATUSES:
        detail = f"baseline: {_describe(b_status, b_result, b_case)}; current: {_describe(c_status, c_result, c_case)}"
        return same_verdict("failed", detail)
    b_series, c_series = series or (RowSeries(b_case, mode), RowSeries(c_case, mode))
    host_bound = b_series.host_bound or c_series.host_bound
    metrics = []
    for m in settings.metrics:
        b_samples, b_logs, b_median = b_series.metric(m)
        c_samples, c_logs, c_median = c_series.metric(m)
        evidence = evidence_of(b_logs, c_logs, (b_median, c_median), paired)
        metrics.append(
            with_levels(
                compare_samples(
                    m,
                    b_samples,
                    c_samples,
                    settings,
                    b_series.sizes,
                    c_series.sizes,
                    (priors or {}).get(stratum(m, host_bound)),
                    paired,
                    evidence,
                    (b_median, c_median),
                    abs((shifts or {}).get(m, 0.0))
                    if b_series.host_paced(m) or c_series.host_paced(m)
                    else 0.0,
                ),
                b_logs,
                c_logs,
            )
        )
    detail = ""
    if b_case.launches_per_iter != c_case.launches_per_iter:
        detail = f"launches per iteration differ: {b_case.launches_per_iter} → {c_case.launches_per_iter}"
    return RowComparison(
        scenario, case_id, mode, b_status, c_status, tuple(metrics), detail, host_bound, disturbed
    )


def with_levels(
    comparison: MetricComparison, b_logs: np.ndarray | None, c_logs: np.ndarray | None
) -> MetricComparison:
    """The comparison with its note on the sides' host levels (from their log pass medians), if any."""
    if b_logs is None or c_logs is None:
        return comparison
    note = comparison_note(find_levels(np.exp(b_logs).tolist()), find_levels(np.exp(c_logs).tolist()))
    return replace(comparison, levels=note) if note else comparison


def noise_priors(
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str], paired: bool = False
) -> dict[tuple[str, bool], NoisePrior]:
    """The prior of each stratum, fitted to the own variances of every row measured on both sides."""
    variances: dict[tuple[str, bool], list[RowVariance]] = {}
    for b_series, c_series in series.values():
        host_bound = b_series.host_bound or c_series.host_bound
        for metric in metrics:
            b_logs, b_median = b_series.metric(metric)[1:]
            c_logs, c_median = c_series.metric(metric)[1:]
            evidence = evidence_of(b_logs, c_logs, (b_median, c_median), paired)
            if evidence is not None and evidence.own.df >= 1:
                variances.setdefault(stratum(metric, host_bound), []).append(evidence.own)
    return fit_priors(variances)


def host_shifts(
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str]
) -> dict[str, float]:
    """Per metric, how far the host-bound rows of two separate runs moved together, beyond what the
    GPU-bound rows moved: the median over host-bound rows of log(current / baseline median) minus the
    same median over GPU-bound rows (none: 0). Only with at least HOST_SHIFT_MIN_ROWS host-bound rows.

    Host-bound rows time the launching thread, whose speed is a property of the host's state when the
    run was made; two runs minutes apart can meet states 20% apart, and then every host-bound row moves
    by about that much together (the rows' own shifts differ by a few percent around it). No spread
    inside one run shows that. A change of the chain (more launches, larger data) moves the GPU-bound
    rows too, and a change in one row does not move the median, so what is left is the pair's
    run-to-run host noise. compare adds it to every host-bound row's standard error, so that a host
    state change is not called a regression; on a quiet host it is close to 0 and each row's own pass
    spread decides. A change that slows every launch alike is indistinguishable from a slower host
    here: ``launchbench ab`` measures both sides in the same seconds."""
    shifts: dict[str, float] = {}
    for metric in metrics:
        moved: dict[bool, list[float]] = {True: [], False: []}
        for b_series, c_series in series.values():
            b_median, c_median = b_series.metric(metric)[2], c_series.metric(metric)[2]
            if b_median > 0 and c_median > 0:
                host_paced = b_series.host_paced(metric) or c_series.host_paced(metric)
                moved[host_paced].append(math.log(c_median / b_median))
        if len(moved[True]) >= HOST_SHIFT_MIN_ROWS:
            gpu = float(np.median(moved[False])) if moved[False] else 0.0
            shifts[metric] = float(np.median(moved[True])) - gpu
    return shifts


def align(baseline: Mapping[RowKey, object], current: Mapping[RowKey, object]) -> list[RowKey]:
    """Row keys in baseline order, then the rows only the current run has (in its order)."""
    return list(baseline) + [k for k in current if k not in baseline]


# ---------------------------------------------------------------------------------------- environment


def gpu_models_differ(baseline: str, current: str) -> bool:
    """True when both GPU names are known and name different models (case and spacing ignored)."""
    if UNKNOWN in (baseline, current):
        return False
    return " ".join(baseline.lower().split()) != " ".join(current.lower().split())


def adjust_across_rows(rows: Sequence[RowComparison], settings: CompareSettings) -> tuple[RowComparison, ...]:
    """The p values of each metric adjusted over the rows that have one (Benjamini–Hochberg,
    scipy.stats.false_discovery_control), and the verdicts decided on the adjusted values. One
    comparison tests every row of every metric: without the adjustment, an A/A comparison of 16 rows
    would call about one row-metric in six invocations slower or faster at alpha 0.01 by chance alone;
    with it, the chance that any row of a metric is called so when none changed is at most alpha."""
    places: dict[str, list[tuple[int, int]]] = {}
    for r, row in enumerate(rows):
        for m, metric in enumerate(row.metrics):
            if math.isfinite(metric.p_value):
                places.setdefault(metric.metric, []).append((r, m))
    metrics = [list(row.metrics) for row in rows]
    for spots in places.values():
        raw = np.array([rows[r].metrics[m].p_value for r, m in spots])
        adjusted = sps.false_discovery_control(raw, method="bh") if len(raw) > 1 else raw
        for (r, m), p in zip(spots, adjusted):
            one = rows[r].metrics[m]
            significant = bool(p < settings.alpha)
            verdict = decide(significant, one.change, one.change_ci, one.threshold)
            metrics[r][m] = replace(one, p_value=float(p), significant=significant, verdict=verdict)
    return tuple(replace(row, metrics=tuple(ms)) for row, ms in zip(rows, metrics))


# ----------------------------------------------------------------------------------------------- entry


def compare_runs(
    baseline: RunRecord,
    current: RunRecord,
    settings: CompareSettings | None = None,
    *,
    allow_different_gpu: bool = False,
    baseline_label: str = "baseline",
    current_label: str = "current",
    paired: bool = False,
) -> Comparison:
    """Align two runs and compare every metric of every row. Raises DifferentGpuError when the GPU
    models differ and ``allow_different_gpu`` is false. ``paired``: see compare_paired."""
    settings = settings or CompareSettings()
    b_env, c_env = summarize_environment(baseline.environment), summarize_environment(current.environment)
    if gpu_models_differ(b_env["gpu"], c_env["gpu"]) and not allow_different_gpu:
        raise DifferentGpuError(
            f"the runs were taken on different GPU models: {baseline_label} on {b_env['gpu']!r}, "
            f"{current_label} on {c_env['gpu']!r}; their timings are not comparable "
            "(pass --allow-different-gpu to compare them anyway)"
        )
    b_rows, c_rows = _rows(baseline), _rows(current)
    series = {
        key: (RowSeries(b_rows[key][0], key[2]), RowSeries(c_rows[key][0], key[2]))
        for key in b_rows
        if key in c_rows
        and b_rows[key][1].status in COMPARABLE_STATUSES
        and c_rows[key][1].status in COMPARABLE_STATUSES
    }
    priors = noise_priors(series, settings.metrics, paired)
    shifts = {} if paired else host_shifts(series, settings.metrics)
    rows = adjust_across_rows(
        [
            compare_row(
                key, b_rows.get(key), c_rows.get(key), settings, priors, paired, series.get(key), shifts
            )
            for key in align(b_rows, c_rows)
        ],
        settings,
    )
    return Comparison(baseline_label, current_label, b_env, c_env, settings, rows, paired, shifts)


def sides_of_one_ab(a: RunRecord, b: RunRecord, a_path: str, b_path: str) -> bool:
    """Whether ``a`` and ``b`` are side A and side B of one ``launchbench ab`` invocation: their
    settings say so and their run directories (or results files' directories) sit in one folder."""
    sides = [
        run.settings.get("ab", {}).get("side") if isinstance(run.settings, dict) else None for run in (a, b)
    ]
    if sides != ["A", "B"]:
        return False

    def folder(path: str) -> Path:
        resolved = Path(path).resolve()
        return resolved.parent.parent if resolved.is_file() else resolved.parent

    return folder(a_path) == folder(b_path)


def compare_paired(
    a: RunRecord,
    b: RunRecord,
    settings: CompareSettings | None = None,
    *,
    a_label: str = "A",
    b_label: str = "B",
) -> Comparison:
    """The paired comparison of two sides of one interleaved invocation (launchbench ab): pass k of both
    sides is round k; the statistics are on each round's B/A ratio."""
    return compare_runs(
        a, b, settings, allow_different_gpu=True, baseline_label=a_label, current_label=b_label, paired=True
    )
