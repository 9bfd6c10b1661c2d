"""The evidence of one row-metric on log(current / baseline), at the level of passes: each side's raw
series read once (``RowSeries``), the log pass medians turned into an estimate with the row's own
variance (``LogEvidence``) by one of two designs (``Evidence``), and the t or bootstrap inference on it
(``infer``).

- ``SeparateRuns`` (``compare``): the difference of the sides' mean log pass medians, its variance the
  row's pooled between-pass variance over 1/P_b + 1/P_c; the interval also reaches the log ratio of
  the pooled medians that the row reports; host-bound rows that moved together count as run-to-run
  noise (``host_shifts``).
- ``PairedRounds`` (``ab``): pass k of both sides is one interleaved round; the trimmed mean of the
  rounds' log ratios (inference.trimmed_rounds), whose exponential is the reported ratio.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from launchbench.analysis.comparison import HOST_SHIFT_MIN_ROWS, CompareSettings, RowKey
from launchbench.analysis.drift import HOST_BOUND_SHARE, NoisePrior, RowVariance, stratum
from launchbench.analysis.inference import (
    Inference,
    bootstrap_inference,
    fsum_mean,
    t_inference,
    trimmed_rounds,
)
from launchbench.analysis.stats import log_pass_medians, sorted_median, usable_passes
from launchbench.measure.levels import Levels, find_levels, needs_fit
from launchbench.results.level_splits import kept_split, levels_with
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    METRIC_BY_NAME,
    WALL,
    CaseResult,
    LevelSplit,
    ModeResult,
)


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


class Evidence(Protocol):
    """How two sides' log pass medians become evidence on the log change: the design of the comparison."""

    paired: ClassVar[bool]  # pass k of both sides is one interleaved round

    def of_logs(self, log_b: np.ndarray, log_c: np.ndarray, medians: tuple[float, float]) -> LogEvidence:
        """The evidence from each side's log pass medians and pooled median (both positive)."""
        ...

    def ratio(self, evidence: LogEvidence | None, medians: tuple[float, float]) -> float:
        """The ratio the row reports (current / baseline)."""
        ...

    def host_shifts(
        self, series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str]
    ) -> dict[str, float]:
        """Per metric, the run-to-run shift of host-bound rows counted in their intervals."""
        ...


class SeparateRuns:
    """Two separate runs: passes of each side are independent of the other's."""

    paired: ClassVar[bool] = False

    def of_logs(self, log_b: np.ndarray, log_c: np.ndarray, medians: tuple[float, float]) -> LogEvidence:
        centers = (fsum_mean(log_c) - fsum_mean(log_b), math.log(medians[1] / medians[0]))
        scale = 1 / len(log_b) + 1 / len(log_c)
        return LogEvidence(centers, RowVariance.of(log_b, log_c), scale, (len(log_b), len(log_c)))

    def ratio(self, evidence: LogEvidence | None, medians: tuple[float, float]) -> float:
        return medians[1] / medians[0]

    def host_shifts(
        self, series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str]
    ) -> dict[str, float]:
        return host_shifts(series, metrics)


class PairedRounds:
    """The two sides of one interleaved invocation (launchbench ab): round k is pass k of both sides
    (rounds beyond the shorter side are left out); what both share in a round cancels."""

    paired: ClassVar[bool] = True

    def of_logs(self, log_b: np.ndarray, log_c: np.ndarray, medians: tuple[float, float]) -> LogEvidence:
        rounds = min(len(log_b), len(log_c))
        center, variance = trimmed_rounds(log_c[:rounds] - log_b[:rounds])
        return LogEvidence((center,), variance, 1 / rounds, (rounds, rounds))

    def ratio(self, evidence: LogEvidence | None, medians: tuple[float, float]) -> float:
        return math.exp(evidence.centers[0]) if evidence is not None else medians[1] / medians[0]

    def host_shifts(
        self, series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str]
    ) -> dict[str, float]:
        return {}  # both sides measured in the same seconds: no run-to-run host noise


SEPARATE_RUNS: Evidence = SeparateRuns()
PAIRED_ROUNDS: Evidence = PairedRounds()


def log_evidence(
    baseline: np.ndarray,
    current: np.ndarray,
    baseline_passes: Sequence[int] | None,
    current_passes: Sequence[int] | None,
    design: Evidence = SEPARATE_RUNS,
) -> LogEvidence | None:
    """The evidence of one metric of one row, or None when a median is not positive or there is no
    sample."""
    if len(baseline) == 0 or len(current) == 0:
        return None
    log_b, log_c = log_pass_medians(baseline, baseline_passes), log_pass_medians(current, current_passes)
    medians = (sorted_median(np.sort(baseline)), sorted_median(np.sort(current)))
    return evidence_of(log_b, log_c, medians, design)


def evidence_of(
    log_b: np.ndarray | None, log_c: np.ndarray | None, medians: tuple[float, float], design: Evidence
) -> LogEvidence | None:
    """log_evidence from each side's log pass medians and pooled median."""
    if log_b is None or log_c is None or not (medians[0] > 0 and medians[1] > 0):
        return None
    return design.of_logs(log_b, log_c, medians)


class RowSeries:
    """One side of one row, each raw series read and summarised once: samples (seconds), pass sizes, log
    pass medians and pooled median. Metrics that share a series differ only by a scale factor."""

    def __init__(self, case: CaseResult, mode: str):
        self.case, self.mode = case, mode
        self.sizes = case.pass_sizes(mode)
        self._cache: dict[str, tuple[np.ndarray, np.ndarray | None, float]] = {}
        self._metrics: dict[str, tuple[np.ndarray, np.ndarray | None, float]] = {}
        self._from_passes: dict[str, list[float]] = {}  # series whose log pass medians are their passes'
        # own medians: those medians, in seconds
        self._kept: dict[str, LevelSplit | None] = {}  # kept_split of those series, looked up once

    def series(self, key: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        if key not in self._cache:
            result = self.case.modes.get(self.mode)  # type: ignore[call-overload]
            pooled = [] if result is None else result.pooled_series(key)
            samples = np.asarray(pooled, dtype=float)
            logs = self._log_medians(samples, result, key) if pooled else None
            median = sorted_median(np.sort(samples)) if pooled else math.nan
            self._cache[key] = (samples, logs, median)
        return self._cache[key]

    def _log_medians(self, samples: np.ndarray, result: ModeResult, key: str) -> np.ndarray | None:
        """stats.log_pass_medians of the pooled samples, taken from each pass's own list where the
        passes' slices are those lists (the same values, without pooling and slicing them again)."""
        sizes = usable_passes(self.sizes, len(samples))
        held = [len(p.samples[key]) for p in result.passes if p.samples.get(key)]
        if sizes is None or held != sizes:
            return log_pass_medians(samples, self.sizes)
        medians = result.pass_medians(key)
        if not all(m > 0 for m in medians):
            return None
        self._from_passes[key] = medians
        return np.log(np.array(medians, dtype=float))

    def metric(self, name: str) -> tuple[np.ndarray, np.ndarray | None, float]:
        """Samples, log pass medians and median of a metric, in its unit (made once per metric)."""
        if name not in self._metrics:
            metric = METRIC_BY_NAME[name]
            samples, logs, median = self.series(metric.sample_key)
            scale = metric.scale(self.case.launches_per_iter)
            shifted = None if logs is None else logs + math.log(scale)
            self._metrics[name] = (samples * scale, shifted, median * scale)
        return self._metrics[name]

    def pass_medians(self, key: str) -> list[float] | None:
        """A raw series' pass medians in seconds where they are its passes' own (None where the passes'
        slices are not their lists, or without passes)."""
        self.series(key)
        return self._from_passes.get(key)

    def levels(self, name: str) -> Levels | None:
        """A metric's host levels in its unit (None without log pass medians): its raw series' split
        (results.level_splits.series_levels: kept in results.json or found on the pass medians in
        seconds) on the metric's pass medians."""
        logs = self.metric(name)[1]
        if logs is None:
            return None
        values = np.exp(logs).tolist()
        key = METRIC_BY_NAME[name].sample_key
        medians = self._from_passes.get(key)
        if medians is None:  # medians of pooled slices: the rule on them as they are
            return find_levels(values)
        return levels_with(self._kept_split(key, medians), medians, on=values)

    def _kept_split(self, key: str, medians: list[float]) -> LevelSplit | None:
        if key not in self._kept:
            result = self.case.modes.get(self.mode)  # type: ignore[call-overload]
            self._kept[key] = None if result is None else kept_split(result, key, medians)
        return self._kept[key]

    def fit_needed(self, key: str) -> bool:
        """Whether a raw series' levels (on its passes' own medians) take the rule's mixture fit: its
        results.json kept no split for them and the rule needs one (results.level_splits.fit_needed)."""
        medians = self.pass_medians(key)
        return medians is not None and self._kept_split(key, medians) is None and needs_fit(tuple(medians))

    @functools.cached_property  # asked for every metric of the row, by several steps
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
