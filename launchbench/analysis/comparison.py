"""The comparison's model: what two runs' comparison holds, row by row and metric by metric, and the
settings it was made with. The verdict rules are in launchbench.analysis.inference (``decide``), the
statistics of one row-metric in launchbench.analysis.evidence, the orchestration over rows in
launchbench.analysis.compare (whose docstring says the whole method). Nothing here loads numpy or SciPy."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from launchbench.analysis.defaults import COMPARED_METRICS, DEFAULT_ALPHA, DEFAULT_THRESHOLD
from launchbench.errors import LaunchbenchError
from launchbench.results.environment import ENV_ITEMS, ENV_LABELS, HOST_ITEMS, UNKNOWN, items_differ
from launchbench.results.schema import MEASURED_STATUSES, METRIC_BY_NAME

Verdict = Literal["faster", "slower", "same", "uncertain", "missing", "failed"]
VERDICTS: tuple[Verdict, ...] = ("slower", "faster", "uncertain", "same", "missing", "failed")

HOST_SHIFT_MIN_ROWS = 3  # host-bound rows needed to estimate their common shift between separate runs
HOST_SHIFT_NOTE = 0.02  # a common shift this large (in log units) is named in the report
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 4000
COMPARABLE_STATUSES = MEASURED_STATUSES

RowKey = tuple[str, str, str]  # (scenario, case, mode)


class DifferentGpuError(LaunchbenchError):
    """The two runs were taken on different GPU models."""


class GpuMismatch(Enum):
    """What a comparison does with two runs taken on different GPU models: refuse them
    (DifferentGpuError), or compare them and say so (--allow-different-gpu)."""

    REFUSE = "refuse"
    ALLOW = "allow"


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


def gpu_models_differ(baseline: str, current: str) -> bool:
    """True when both GPU names are known and name different models (case and spacing ignored)."""
    if UNKNOWN in (baseline, current):
        return False
    return " ".join(baseline.lower().split()) != " ".join(current.lower().split())
