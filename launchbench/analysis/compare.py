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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from launchbench.analysis.comparison import (
    COMPARABLE_STATUSES,
    CompareSettings,
    CompareSettingsError,
    Comparison,
    DifferentGpuError,
    GpuMismatch,
    MetricComparison,
    RowComparison,
    RowKey,
    Verdict,
    gpu_models_differ,
    parse_threshold,
)
from launchbench.analysis.defaults import DEFAULT_THRESHOLD
from launchbench.analysis.drift import NoisePrior, RowVariance, fit_priors, stratum
from launchbench.analysis.evidence import (
    PAIRED_ROUNDS,
    SEPARATE_RUNS,
    Evidence,
    LogEvidence,
    RowSeries,
    evidence_of,
    host_shifts,
    infer,
    log_evidence,
)
from launchbench.analysis.host_levels import comparison_note
from launchbench.analysis.inference import (
    POWER,
    benjamini_hochberg,
    bootstrap_medians,
    decide,
    trimmed_rounds,
)
from launchbench.analysis.stats import sorted_median, usable_passes
from launchbench.forked import chunks, forked_map, worth_forking
from launchbench.measure.levels import Levels, fitted_together
from launchbench.results.environment import summarize_environment
from launchbench.results.schema import METRIC_BY_NAME, CaseResult, ModeResult, RunRecord

__all__ = [  # the model and the inference, imported from here by report/, run/ and cli/
    "COMPARABLE_STATUSES",
    "DEFAULT_THRESHOLD",
    "PAIRED_ROUNDS",
    "POWER",
    "SEPARATE_RUNS",
    "CompareSettings",
    "CompareSettingsError",
    "Comparison",
    "DifferentGpuError",
    "GpuMismatch",
    "Evidence",
    "LogEvidence",
    "MetricComparison",
    "MetricSamples",
    "RowComparison",
    "RowContext",
    "RowKey",
    "RowSeries",
    "Verdict",
    "adjust_across_rows",
    "benjamini_hochberg",
    "bootstrap_medians",
    "compare_paired",
    "compare_row",
    "compare_runs",
    "compare_samples",
    "decide",
    "gpu_models_differ",
    "host_shifts",
    "log_evidence",
    "parse_threshold",
    "priors_of",
    "row_evidence",
    "sides_of_one_ab",
    "trimmed_rounds",
]


@dataclass(frozen=True)
class MetricSamples:
    """One metric of one row on both sides: the raw samples (in the metric's unit) and how many samples
    each pass contributed, in order (None or fewer than two passes: one pass). ``evidence`` and
    ``medians``: the LogEvidence and pooled medians of these samples, where the caller has them."""

    metric: str
    baseline: np.ndarray
    current: np.ndarray
    baseline_passes: Sequence[int] | None = None
    current_passes: Sequence[int] | None = None
    evidence: LogEvidence | None = None
    medians: tuple[float, float] | None = None


@dataclass(frozen=True)
class RowContext:
    """What a row's metric is judged with beyond CompareSettings: the design of the comparison, the
    noise of rows of its kind (drift.fit_priors, toward which its own variance is shrunk) and a
    run-to-run component of the log change's standard error (host_shifts)."""

    design: Evidence = SEPARATE_RUNS
    prior: NoisePrior | None = None
    run_noise: float = 0.0


def compare_samples(
    samples: MetricSamples, settings: CompareSettings, context: RowContext = RowContext()
) -> MetricComparison:
    """Compare the raw samples of one metric of one row."""
    metric, baseline, current = samples.metric, samples.baseline, samples.current
    threshold = settings.threshold(metric)
    nb, nc = len(baseline), len(current)
    b_passes = usable_passes(samples.baseline_passes, nb)
    c_passes = usable_passes(samples.current_passes, nc)
    if nb == 0 or nc == 0:
        side = "baseline" if nb == 0 else "current"
        return MetricComparison(
            metric,
            "missing",
            threshold=threshold,
            n_baseline=nb,
            n_current=nc,
            detail=f"no samples in {side}",
        )
    counts: dict[str, Any] = {
        "threshold": threshold,
        "n_baseline": nb,
        "n_current": nc,
        "passes_baseline": len(b_passes) if b_passes else 1,
        "passes_current": len(c_passes) if c_passes else 1,
    }
    b_med, c_med = samples.medians or (sorted_median(np.sort(baseline)), sorted_median(np.sort(current)))
    if not (b_med > 0 and c_med > 0):
        return MetricComparison(
            metric, "uncertain", b_med, c_med, **counts, detail="a median is not positive; no ratio"
        )
    design = context.design
    evidence = samples.evidence or log_evidence(baseline, current, b_passes, c_passes, design)
    inference = infer(evidence, context.prior, baseline, current, settings, context.run_noise)
    ratio = design.ratio(evidence, (b_med, c_med))
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


def _unmeasured(baseline: Side | None, current: Side | None) -> tuple[Verdict, str] | None:
    """``missing`` when a side lacks the row, ``failed`` when a side did not measure it, with why; None
    when both sides measured it."""
    if baseline is None or current is None:
        return "missing", f"only in {'current' if baseline is None else 'baseline'}"
    if baseline[1].status in COMPARABLE_STATUSES and current[1].status in COMPARABLE_STATUSES:
        return None
    sides = (
        f"{name}: {_describe(r.status, r, c)}"
        for name, (c, r) in (("baseline", baseline), ("current", current))
    )
    return "failed", "; ".join(sides)


def _unmeasured_row(
    key: RowKey,
    baseline: Side | None,
    current: Side | None,
    settings: CompareSettings,
    why: tuple[Verdict, str],
) -> RowComparison:
    """A row not measured on both sides: every metric gets the same verdict."""
    verdict, detail = why
    metrics = tuple(
        MetricComparison(m, verdict, threshold=settings.threshold(m), detail=detail) for m in settings.metrics
    )
    b_status, c_status = (side[1].status if side else None for side in (baseline, current))
    measured = [
        RowSeries(side[0], key[2]).host_bound
        for side in (baseline, current)
        if side is not None and side[1].status in COMPARABLE_STATUSES
    ]
    return RowComparison(
        *key, b_status, c_status, metrics, detail, any(measured), _disturbed(baseline, current)
    )


def _disturbed(baseline: Side | None, current: Side | None) -> int:
    return sum(side[1].disturbed_passes for side in (baseline, current) if side is not None)


def compare_row(
    key: RowKey,
    baseline: Side | None,
    current: Side | None,
    settings: CompareSettings,
    priors: Priors | None = None,
    design: Evidence = SEPARATE_RUNS,
    series: tuple[RowSeries, RowSeries] | None = None,
    shifts: Mapping[str, float] | None = None,
    evidence: RowEvidence | None = None,
) -> RowComparison:
    """One row's metrics; ``priors`` (per drift.stratum) moderate each metric's variance; ``series``:
    the two sides' RowSeries when the caller made them already; ``shifts``: per metric, the common
    shift of host-bound rows (host_shifts), a run-to-run component of a host-bound row's error;
    ``evidence``: the row's evidence per metric when the caller made it already (row_evidence)."""
    why = _unmeasured(baseline, current)
    if why is not None or baseline is None or current is None:
        return _unmeasured_row(key, baseline, current, settings, why or ("missing", ""))
    (b_case, b_result), (c_case, c_result) = baseline, current
    b_series, c_series = series or (RowSeries(b_case, key[2]), RowSeries(c_case, key[2]))
    host_bound = b_series.host_bound or c_series.host_bound
    metrics = []
    for m in settings.metrics:
        (b_samples, b_logs, b_median), (c_samples, c_logs, c_median) = b_series.metric(m), c_series.metric(m)
        medians = (b_median, c_median)
        samples = MetricSamples(
            m,
            b_samples,
            c_samples,
            b_series.sizes,
            c_series.sizes,
            evidence[m] if evidence is not None else evidence_of(b_logs, c_logs, medians, design),
            medians,
        )
        host_paced = b_series.host_paced(m) or c_series.host_paced(m)
        context = RowContext(
            design,
            (priors or {}).get(stratum(m, host_bound)),
            abs((shifts or {}).get(m, 0.0)) if host_paced else 0.0,
        )
        levels = (b_series.levels(m), c_series.levels(m))
        metrics.append(with_levels(compare_samples(samples, settings, context), *levels))
    detail = ""
    if b_case.launches_per_iter != c_case.launches_per_iter:
        detail = f"launches per iteration differ: {b_case.launches_per_iter} → {c_case.launches_per_iter}"
    return RowComparison(
        *key,
        b_result.status,
        c_result.status,
        tuple(metrics),
        detail,
        host_bound,
        _disturbed(baseline, current),
    )


def with_levels(
    comparison: MetricComparison, b_levels: Levels | None, c_levels: Levels | None
) -> MetricComparison:
    """The comparison with its note on the sides' host levels (RowSeries.levels), if any."""
    if b_levels is None or c_levels is None:
        return comparison
    note = comparison_note(b_levels, c_levels)
    return replace(comparison, levels=note) if note else comparison


def fits_wanted(
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str]
) -> Iterator[tuple[float, ...]]:
    """The pass medians of every side's series, of every metric's raw series, whose host levels need
    the rule's fit and whose results.json kept no split for them (results.level_splits)."""
    keys = dict.fromkeys(METRIC_BY_NAME[m].sample_key for m in metrics)
    for sides in series.values():
        for side in sides:
            for key in keys:
                if side.fit_needed(key):
                    yield tuple(side.pass_medians(key) or ())


RowEvidence = Mapping[str, LogEvidence | None]  # one row's evidence per metric


def row_evidence(
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]], metrics: Sequence[str], design: Evidence
) -> dict[RowKey, RowEvidence]:
    """Each row's evidence per metric (evidence_of its sides' log pass medians), made once for the priors
    and the rows' comparisons."""
    made: dict[RowKey, RowEvidence] = {}
    for key, (b_series, c_series) in series.items():
        one: dict[str, LogEvidence | None] = {}
        for metric in metrics:
            b_logs, b_median = b_series.metric(metric)[1:]
            c_logs, c_median = c_series.metric(metric)[1:]
            one[metric] = evidence_of(b_logs, c_logs, (b_median, c_median), design)
        made[key] = one
    return made


def priors_of(
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]], evidence: Mapping[RowKey, RowEvidence]
) -> dict[tuple[str, bool], NoisePrior]:
    """The prior of each stratum, fitted to the own variances of every row measured on both sides, from
    the rows' evidence (row_evidence)."""
    variances: dict[tuple[str, bool], list[RowVariance]] = {}
    for key, (b_series, c_series) in series.items():
        host_bound = b_series.host_bound or c_series.host_bound
        for metric, one in evidence[key].items():
            if one is not None and one.own.df >= 1:
                variances.setdefault(stratum(metric, host_bound), []).append(one.own)
    return fit_priors(variances)


def align(baseline: Mapping[RowKey, object], current: Mapping[RowKey, object]) -> list[RowKey]:
    """Row keys in baseline order, then the rows only the current run has (in its order)."""
    return list(baseline) + [k for k in current if k not in baseline]


def adjust_across_rows(rows: Sequence[RowComparison], settings: CompareSettings) -> tuple[RowComparison, ...]:
    """The p values of each metric adjusted over the rows that have one (Benjamini–Hochberg:
    inference.benjamini_hochberg, as scipy.stats.false_discovery_control computes it), and the verdicts
    decided on the adjusted values. One
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
        adjusted = benjamini_hochberg(raw)
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
    gpu_mismatch: GpuMismatch = GpuMismatch.REFUSE,
    baseline_label: str = "baseline",
    current_label: str = "current",
    design: Evidence = SEPARATE_RUNS,
    jobs: int = 1,
) -> Comparison:
    """Align two runs and compare every metric of every row. Raises DifferentGpuError when the GPU
    models differ and ``gpu_mismatch`` is ``GpuMismatch.REFUSE``. ``design``: separate runs, or the paired rounds
    of one interleaved invocation (see compare_paired). ``jobs``: the rows compared in up to that many
    forked processes at once (launchbench.forked), one for each ROWS_PER_JOB rows at least, after the
    evidence, priors and shifts every row shares: the same rows."""
    settings = settings or CompareSettings()
    b_env, c_env = summarize_environment(baseline.environment), summarize_environment(current.environment)
    if gpu_models_differ(b_env["gpu"], c_env["gpu"]) and gpu_mismatch is GpuMismatch.REFUSE:
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
    evidence = row_evidence(series, settings.metrics, design)
    priors = priors_of(series, evidence)
    shifts = design.host_shifts(series, settings.metrics)
    compared = _RowsCompared(b_rows, c_rows, settings, priors, design, series, shifts, evidence)
    keys = align(b_rows, c_rows)
    workers = worth_forking(len(keys), ROWS_PER_JOB, jobs)
    with fitted_together(fits_wanted(series, settings.metrics)):  # the host levels' fits, at once
        parts = forked_map(compared.of, chunks(keys, workers), workers)
    rows = adjust_across_rows([row for part in parts for row in part], settings)
    return Comparison(baseline_label, current_label, b_env, c_env, settings, rows, design.paired, shifts)


ROWS_PER_JOB = 500  # compare_runs forks a worker for at least this many rows (about 0.15 s of them)


@dataclass(frozen=True)
class _RowsCompared:
    """What compare_row needs besides a row's key, made once for every row of two runs."""

    b_rows: Mapping[RowKey, Side]
    c_rows: Mapping[RowKey, Side]
    settings: CompareSettings
    priors: Priors
    design: Evidence
    series: Mapping[RowKey, tuple[RowSeries, RowSeries]]
    shifts: Mapping[str, float]
    evidence: Mapping[RowKey, RowEvidence]

    def of(self, keys: Sequence[RowKey]) -> list[RowComparison]:
        """The rows of ``keys`` compared, in their order."""
        return [
            compare_row(
                key,
                self.b_rows.get(key),
                self.c_rows.get(key),
                self.settings,
                self.priors,
                self.design,
                self.series.get(key),
                self.shifts,
                self.evidence.get(key),
            )
            for key in keys
        ]


def sides_of_one_ab(a: RunRecord, b: RunRecord, a_path: str, b_path: str) -> bool:
    """Whether ``a`` and ``b`` are side A and side B of one ``launchbench ab`` invocation: their
    settings say so and their run directories (or results files' directories) sit in one folder."""
    sides = [run.settings.ab.side for run in (a, b)]
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
        a,
        b,
        settings,
        gpu_mismatch=GpuMismatch.ALLOW,
        baseline_label=a_label,
        current_label=b_label,
        design=PAIRED_ROUNDS,
    )
