"""The results.json schema (pydantic models) and the metrics that results.csv summarises.

Everything inside is in seconds and bytes; results.csv converts to the units its column names say.

Schema changelog (bump SCHEMA_VERSION for every change and add a line here; store.py migrates older
files forward and refuses newer ones):
  1 — first version: environment, scenarios, settings, cases with per-mode raw samples (pooled over
      passes, with the number each pass contributed), graph life cycle per pass, correctness check,
      clocks, harness cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
TOOL_NAME = "launchbench"

Mode = Literal["eager", "graph"]
MODES: tuple[Mode, ...] = ("eager", "graph")

# Raw sample series kept per mode (seconds).
WALL = "wall_s_per_iter"  # wall time of one chain iteration, launched back to back (throughput)
CPU = "cpu_s_per_iter"  # launching thread's CPU time (thread_time) per iteration
GPU = "gpu_s_per_iter"  # CUDA-event time on the working stream per iteration
LATENCY = "latency_s"  # one iteration launched and synchronized: launch to completion
SAMPLE_KEYS = (WALL, CPU, GPU, LATENCY)
MEASURED_STATUSES = frozenset({"ok", "budget"})  # a mode with samples: sampled to its target or to its budget


@dataclass(frozen=True)
class Metric:
    """A timing column of results.csv: which raw series it summarises and how it is scaled."""

    name: str
    sample_key: str
    per_launch: bool
    doc: str

    def scale(self, launches_per_iter: int) -> float:
        """Factor from the raw series (seconds per iteration) to this metric's unit (µs, per launch or not)."""
        return 1e6 / launches_per_iter if self.per_launch else 1e6


METRICS: tuple[Metric, ...] = (
    Metric("wall_us_per_launch", WALL, True, "wall time per launch, chain run back to back (throughput)"),
    Metric("wall_us_per_iter", WALL, False, "wall time per chain iteration, run back to back"),
    Metric("cpu_us_per_launch", CPU, True, "launching thread's CPU time per launch"),
    Metric("cpu_us_per_iter", CPU, False, "launching thread's CPU time per chain iteration"),
    Metric("gpu_us_per_iter", GPU, False, "GPU time per iteration, CUDA events on the working stream"),
    Metric("gpu_us_per_launch", GPU, True, "GPU time per launch, CUDA events on the working stream"),
    Metric("latency_us", LATENCY, False, "one iteration launched and synchronized: launch to completion"),
)
METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}

SPREAD_SUFFIXES: dict[str, str] = {
    "ci_low": "lower bound of the median's 95% confidence interval",
    "ci_high": "upper bound of the median's 95% confidence interval",
    "p5": "5th percentile",
    "p95": "95th percentile",
    "mean": "mean",
    "std": "standard deviation",
    "mad": "median absolute deviation",
    "n": "number of samples",
    "outliers": "samples more than 3 scaled MADs from the median",
    "rel_ci": "half-width of the median's CI over the median (what adaptive sampling targets)",
    "rel_noise": "1.4826·MAD / median (robust relative noise)",
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GraphLifecycle(_Frozen):
    """The graph's own costs. ``split`` says whether capture and instantiate were timed separately
    (capture driven through cuda.bindings on CuPy's stream) or together (CuPy's end_capture instantiates)."""

    split: bool
    capture_s: float
    instantiate_s: float | None
    upload_s: float
    first_launch_s: float
    nodes: int | None
    mem_bytes: int | None

    @property
    def setup_s(self) -> float:
        """What a graph costs before it pays off: capture + instantiate + upload."""
        return self.capture_s + (self.instantiate_s or 0.0) + self.upload_s


class ModeResult(_Frozen):
    mode: Mode
    status: Literal["ok", "budget", "not_capturable", "failed", "skipped"]
    reason: str | None = None
    iters_per_sample: int = 0
    samples: dict[str, list[float]] = Field(default_factory=dict)
    throttled_samples: int = 0
    target_met: bool = False
    lifecycle: GraphLifecycle | None = None
    pass_sizes: list[int] = Field(default_factory=list)  # samples per series contributed by each pass, in order
    lifecycle_passes: list[GraphLifecycle] = Field(default_factory=list)


class Clocks(_Frozen):
    sm_mhz: float | None = None
    mem_mhz: float | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    settle_s: float | None = None


class CaseResult(_Frozen):
    scenario: str
    case_id: str
    chain: str
    kinds: str
    params: dict[str, Any] = Field(default_factory=dict)
    launches_per_iter: int
    modes: dict[str, ModeResult] = Field(default_factory=dict)
    outputs_match: bool | None = None
    check_detail: str | None = None
    clocks: Clocks = Field(default_factory=Clocks)
    harness_s_per_iter: float | None = None
    elapsed_s: float = 0.0
    error: str | None = None
    error_kind: Literal["input", "runtime", "mismatch", "resources"] | None = None
    passes_done: int = 1

    def pass_sizes(self, mode: str) -> list[int] | None:
        result = self.modes.get(mode)
        return list(result.pass_sizes) if result is not None and len(result.pass_sizes) > 1 else None

    def samples(self, mode: str, key: str) -> np.ndarray:
        result = self.modes.get(mode)
        if result is None:
            return np.array([], dtype=float)
        return np.asarray(result.samples.get(key, []), dtype=float)

    def metric_samples(self, mode: str, metric: str | Metric) -> np.ndarray:
        """Raw samples of a metric in its unit (µs, per launch where the metric says so)."""
        m = METRIC_BY_NAME[metric] if isinstance(metric, str) else metric
        return self.samples(mode, m.sample_key) * m.scale(self.launches_per_iter)


class ScenarioInfo(_Frozen):
    name: str
    description: str
    file: str
    sha256: str


class RunRecord(_Frozen):
    schema_version: int = SCHEMA_VERSION
    tool: str = TOOL_NAME
    launchbench_version: str
    status: Literal["running", "complete", "interrupted", "failed"] = "running"
    started: str
    finished: str | None = None
    argv: list[str] = Field(default_factory=list)
    environment: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    scenarios: list[ScenarioInfo] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)

    def case(self, scenario: str, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if (c.scenario, c.case_id) == (scenario, case_id)), None)

    def with_case(self, case: CaseResult) -> RunRecord:
        """The record with this case added, or replaced in place where an earlier pass recorded it."""
        key = (case.scenario, case.case_id)
        if any((c.scenario, c.case_id) == key for c in self.cases):
            return self.model_copy(update={"cases": [case if (c.scenario, c.case_id) == key else c for c in self.cases]})
        return self.model_copy(update={"cases": [*self.cases, case]})

    @property
    def gpu_name(self) -> str:
        return str(self.environment.get("gpu", {}).get("name", "unknown GPU"))
