"""results.csv: one row per case and mode, summarising the raw samples in the units the columns name;
each row's values come from the declared columns (launchbench.analysis.columns.DECLARED) over the row's
facts (``RowFactsOf``)."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from launchbench.analysis.columns import COLUMNS, DECLARED, Column
from launchbench.analysis.drift import NoisePrior, RowVariance, fit_priors, is_host_bound, stratum
from launchbench.analysis.host_levels import metric_levels
from launchbench.analysis.stats import Summary, log_pass_medians, summarize
from launchbench.forked import chunks, forked_map, worth_forking
from launchbench.measure.levels import Levels
from launchbench.results.schema import (
    METRIC_BY_NAME,
    METRICS,
    WALL,
    CaseResult,
    GraphLifecycle,
    Metric,
    ModeResult,
    RunRecord,
)


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if len(values) else math.nan


def widen_to_pass_noise(summary: Summary, logs: np.ndarray | None, prior: NoisePrior | None) -> Summary:
    """A multi-pass row's CI of the median, widened to at least the t interval of its mean log pass
    median, on the row's between-pass variance shrunk toward the rows of its kind (drift.NoisePrior)."""
    if logs is None or len(logs) < 2 or not summary.median > 0:
        return summary
    own = RowVariance.of(logs)
    variance, df = prior.moderate(own) if prior is not None else (own.variance, own.df)
    if not (math.isfinite(variance) and df >= 1):
        return summary
    factor = math.exp(float(special.stdtrit(df, 0.975)) * math.sqrt(variance / len(logs)))
    return dataclasses.replace(
        summary,
        ci_low=min(summary.ci_low, summary.median / factor),
        ci_high=max(summary.ci_high, summary.median * factor),
    )


def noise_priors(run: RunRecord, metrics: Sequence[Metric] = METRICS) -> dict[tuple[str, bool], NoisePrior]:
    """Per stratum (drift.stratum), the prior fitted to the between-pass variances of the run's rows."""
    variances: dict[tuple[str, bool], list[RowVariance]] = {}
    for case in run.cases:
        for mode in case.modes:
            host_bound = is_host_bound(case, mode)
            for metric in metrics:
                logs = log_pass_medians(case.metric_samples(mode, metric), case.pass_sizes(mode))
                if logs is not None and len(logs) >= 2:
                    variances.setdefault(stratum(metric.name, host_bound), []).append(RowVariance.of(logs))
    return fit_priors(variances)


def _rank_walls(result: ModeResult) -> str | None:
    """Each rank's median wall µs per iteration over the mode's passes, ';'-separated (None on one GPU)."""
    pooled: dict[int, list[float]] = {}
    for one in result.passes:
        for rank in one.ranks:
            pooled.setdefault(rank.rank, []).extend(rank.samples.get(WALL, []))
    if not pooled:
        return None
    return ";".join(f"{_median(np.asarray(pooled[r])) * 1e6:.4g}" for r in sorted(pooled))


@dataclass(frozen=True)
class Placement:
    """Where a case ran: its GPU's name, node and device."""

    gpu_name: str
    node: str | None = None
    device: int | None = None


GRAPH_MODES = ("graph", "torch_graph")  # the modes whose rows carry a graph's life cycle


class RowFactsOf:
    """The facts of one row (columns.RowFacts) that the declared columns compute their values from; the
    summaries (each metric's CI widened to its pass noise, shrunk toward ``priors``) and levels made once."""

    def __init__(
        self, case: CaseResult, mode: str, placement: Placement, priors: Mapping[tuple[str, bool], NoisePrior]
    ):
        self.case, self.mode, self.result = case, mode, case.modes[mode]  # type: ignore[index]
        self.gpu_name, self.node, self.device = placement.gpu_name, placement.node, placement.device
        self.priors = priors
        self.host_bound = is_host_bound(case, mode)
        self.rank_walls = _rank_walls(self.result)
        self._summaries: dict[str, Summary] = {}
        self._levels: dict[str, Levels] = {}
        self._walls: dict[str, float] = {}  # a mode's median wall time per iteration, for the speedup columns

    @functools.cached_property  # the median over passes, read by every life-cycle column of the row
    def graph_life(self) -> GraphLifecycle | None:
        return self.result.lifecycle if self.mode in GRAPH_MODES else None

    def _wall(self, mode: str) -> float:
        if mode not in self._walls:
            self._walls[mode] = _median(self.case.samples(mode, WALL))
        return self._walls[mode]

    @property
    def speedup(self) -> float | None:
        eager_wall = self._wall("eager")
        if self.mode == "eager":
            return None
        mode_wall = self._wall(self.mode)
        return eager_wall / mode_wall if mode_wall > 0 and not math.isnan(eager_wall) else None

    @property
    def break_even_iters(self) -> float | None:
        """Graph setup over the wall time a replay saves per iteration (None where it saves none)."""
        if self.graph_life is None:
            return None
        saving = self._wall("eager") - self._wall(self.mode)
        return self.graph_life.setup_s / saving if saving > 0 else None

    def summary(self, metric: str) -> Summary:
        """The metric's summary (made at the first of its columns, read by the others)."""
        if metric not in self._summaries:
            self._summaries[metric] = self._summarize(metric)
        return self._summaries[metric]

    def _summarize(self, metric: str) -> Summary:
        m = METRIC_BY_NAME[metric]
        samples, sizes = self.case.metric_samples(self.mode, m), self.case.pass_sizes(self.mode)
        summary = summarize(samples, sizes)
        if sizes is None:
            return summary
        prior = self.priors.get(stratum(metric, self.host_bound))
        return widen_to_pass_noise(summary, log_pass_medians(samples, sizes), prior)

    def levels(self, metric: str) -> Levels:
        """The metric's host levels (found at the first of their columns, read by the others)."""
        if metric not in self._levels:
            self._levels[metric] = metric_levels(self.case, self.mode, metric)
        return self._levels[metric]


class HostLevels(Enum):
    """Whether a table holds the host levels' columns: FIT them (a mixture fit per row), or SKIP them
    and leave those columns empty (the figures need none)."""

    FIT = "fit"
    SKIP = "skip"


def _wanted(column: Column, metrics: frozenset[str], levels: HostLevels) -> bool:
    """Whether a row carries the column: a metric's columns only where it is summarised, the levels'
    per-metric columns only with ``HostLevels.FIT``."""
    if column.metric is None:
        return True
    return column.metric in metrics if column.group == "metric" else levels is HostLevels.FIT


def case_rows(
    case: CaseResult,
    placement: Placement,
    priors: Mapping[tuple[str, bool], NoisePrior] | None = None,
    metrics: Sequence[Metric] = METRICS,
    levels: HostLevels = HostLevels.FIT,
) -> list[dict[str, Any]]:
    """The case's rows, a value for every declared column (columns.DECLARED); a multi-pass row's CI
    covers its pass noise, shrunk toward ``priors`` (noise_priors). Only ``metrics`` are summarised (the
    columns of the others stay empty); with ``HostLevels.SKIP`` the host level columns stay empty too."""
    names = frozenset(m.name for m in metrics)
    columns = [c for c in DECLARED if _wanted(c, names, levels)]
    rows = []
    for mode in case.modes:
        facts = RowFactsOf(case, mode, placement, priors or {})
        rows.append({column.name: column.value(facts) for column in columns})
    return rows


def _placement(run: RunRecord) -> dict[tuple[str | None, int | None], tuple[str, str | None, int | None]]:
    """Per (node, device) of a case: its GPU's name, node and device (a plain run's cases carry neither:
    the run's own host and --device)."""
    host = run.environment.host.hostname
    out: dict[tuple[str | None, int | None], tuple[str, str | None, int | None]] = {
        (None, None): (run.gpu_name, host, run.settings.device)
    }
    for member in run.members:
        name = member.environment.gpu.name or "unknown GPU"
        out[(member.node, member.device)] = (name, member.node, member.device)
    return out


CASES_PER_JOB = 50  # run_table forks a worker for at least this many cases (about 0.1 s of rows)


@dataclass(frozen=True)
class _TableRows:
    """What every row of one run's table needs besides its case: the run, the priors, the placements."""

    run: RunRecord
    priors: Mapping[tuple[str, bool], NoisePrior]
    placement: Mapping[tuple[str | None, int | None], tuple[str, str | None, int | None]]
    metrics: Sequence[Metric]
    levels: HostLevels

    def of(self, cases: Sequence[CaseResult]) -> list[dict[str, Any]]:
        """The rows of ``cases``, in their order."""
        rows = []
        for case in cases:
            found = self.placement.get((case.node, case.device), (self.run.gpu_name, case.node, case.device))
            rows.extend(case_rows(case, Placement(*found), self.priors, self.metrics, self.levels))
        return rows


def run_table(
    run: RunRecord, metrics: Sequence[Metric] = METRICS, levels: HostLevels = HostLevels.FIT, jobs: int = 1
) -> pd.DataFrame:
    """results.csv's table of ``run``. With ``metrics``, only their columns are summarised; with
    ``HostLevels.SKIP``, no host levels (a mixture fit per row): the figures need three
    metrics of seven and no levels, and those are most of the time and memory a large run's table takes.
    ``jobs``: the cases' rows made in up to that many forked processes at once (launchbench.forked; the
    same rows), one for each CASES_PER_JOB cases at least, after the priors, which every row shares."""
    priors = noise_priors(run, metrics)
    made = _TableRows(run, priors, _placement(run), metrics, levels)
    workers = worth_forking(len(run.cases), CASES_PER_JOB, jobs)
    parts = forked_map(made.of, chunks(run.cases, workers), workers)
    frame = pd.DataFrame.from_records([row for part in parts for row in part], columns=list(COLUMNS))
    return frame.replace([math.inf, -math.inf], math.nan)
