"""The JSON documents launchbench prints, one frozen pydantic model each: `compare`/`ab --format json`,
`check --format json`, `env --format json` and `history list|trend|changes --format json`.

Every document carries ``schema_version`` (its own, counted from 1; results.json has its own in
launchbench.results.schema). The JSON Schemas published under docs/schemas/ are generated from these
models (launchbench.report.json_schemas), so a field added here is a field in the schema.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from launchbench.analysis.compare import Verdict
from launchbench.analysis.gate import CheckKind

COMPARISON_SCHEMA_VERSION = 1
CHECK_SCHEMA_VERSION = 1
ENV_SCHEMA_VERSION = 1
HISTORY_SCHEMA_VERSION = 1

OptionalFloat = float | None  # null where the value does not exist (NaN, no baseline, one-pass rows)


class Document(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def version_field(version: int, what: str) -> int:
    """``schema_version``: the version of this document's layout, raised when a field changes meaning or
    is removed."""
    return Field(version, description=f"version of the {what} document's layout")


# ------------------------------------------------------------------------------------------ comparison


class ComparisonLine(Document):
    """One row (scenario, case, mode) and one metric of a comparison: a line of compare's CSV, in its
    column order."""

    scenario: str = Field(description="scenario name")
    case: str = Field(description="case id")
    mode: str = Field(description="eager, graph, or a shape strategy (recapture, cache, update)")
    metric: str = Field(description="the metric compared (a results.csv metric)")
    baseline_median_us: OptionalFloat = Field(description="the baseline's median, µs")
    current_median_us: OptionalFloat = Field(description="the current run's median, µs")
    delta_us: OptionalFloat = Field(description="current − baseline median, µs")
    ratio: OptionalFloat = Field(description="current / baseline median")
    change_pct: OptionalFloat = Field(description="ratio − 1, in percent")
    change_ci_low_pct: OptionalFloat = Field(description="lower end of the change's 95% CI, percent")
    change_ci_high_pct: OptionalFloat = Field(description="upper end of the change's 95% CI, percent")
    p_value: OptionalFloat = Field(
        description="p of the t test of no change, adjusted over the rows of the metric (null: one pass)"
    )
    mde_pct: OptionalFloat = Field(
        description="minimum detectable effect: the change the test finds with 80% power, percent"
    )
    significant: bool = Field(description="p below alpha (one-pass rows: the CI excludes 0)")
    threshold_pct: float = Field(description="the smallest change that counts for this metric, percent")
    n_baseline: int = Field(description="samples on the baseline side")
    n_current: int = Field(description="samples on the current side")
    passes_baseline: int = Field(description="passes (rounds for ab) on the baseline side")
    passes_current: int = Field(description="passes (rounds for ab) on the current side")
    baseline_status: str = Field(description="the row's status in the baseline (empty: not there)")
    current_status: str = Field(description="the row's status in the current run (empty: not there)")
    verdict: Verdict = Field(description="slower, faster, uncertain, same, missing or failed")
    gate: Literal["fail", "pass", ""] = Field(description="the gate's word on the line (empty: no rule)")
    detail: str = Field(description="why a row is missing or failed, or what differs between the sides")
    levels: str = Field(description="the sides' host levels where either sits at two")


class ComparisonSide(Document):
    source: str = Field(description="the run directory, results file or history selection")
    environment: dict[str, str] = Field(description="the environment items compared (GPU, driver, …)")


class EnvironmentDifference(Document):
    item: str
    baseline: str
    current: str


class ComparisonSettingsRecord(Document):
    metrics: list[str]
    thresholds_pct: dict[str, float]
    alpha: float
    paired: bool = Field(description="rounds of one `launchbench ab` run, paired round by round")
    confidence: float
    resamples: int
    seed: int


class CheckRecord(Document):
    """One check of a gate or of a run's expectations."""

    kind: CheckKind
    scenario: str | None
    case: str
    mode: str
    metric: str
    rule: str
    passed: bool
    improved: bool
    value: OptionalFloat
    message: str


class GateRecord(Document):
    passed: bool
    failures: int = Field(description="checks that failed")
    improvements: int = Field(description="gated rows that improved")
    notes: list[str]
    checks: list[CheckRecord]


class ComparisonDocument(Document):
    """`compare --format json` and `ab --format json`."""

    schema_version: int = version_field(COMPARISON_SCHEMA_VERSION, "comparison")
    baseline: ComparisonSide
    current: ComparisonSide
    environment_differences: list[EnvironmentDifference]
    different_gpu: bool
    warnings: list[str] = Field(
        description="what the runs hold that a reader must know: an unfinished run, a scenario file that "
        "changed, host-bound rows in doubt where Python, the CPU model, cuda-bindings or CuPy differ"
    )
    settings: ComparisonSettingsRecord
    counts: dict[Verdict, int] = Field(description="(row, metric) pairs per verdict")
    rows: list[ComparisonLine]
    gate: GateRecord | None = Field(description="the gate's outcome (null: no --fail-on rule)")


class DeviceComparisonDocument(ComparisonDocument):
    """One GPU's comparison in `ab --devices --format json`: compare's document with the device."""

    device: int = Field(description="CUDA device index")
    cpus: list[int] = Field(description="the CPUs that device's A and B workers were pinned to")


class AbDevicesDocument(Document):
    """`ab --devices --format json`: the combined verdict and each GPU's comparison."""

    schema_version: int = version_field(COMPARISON_SCHEMA_VERSION, "ab on several devices")
    passed: bool | None = Field(description="every device's gate passed (null: no --fail-on rule)")
    failed_devices: list[int] = Field(description="devices whose gate failed")
    devices: list[DeviceComparisonDocument]


class ComparisonSeriesDocument(Document):
    """`compare BASELINE CURRENT CURRENT… --format json`: one comparison document per CURRENT run."""

    schema_version: int = version_field(COMPARISON_SCHEMA_VERSION, "comparison series")
    baseline: str = Field(description="the BASELINE every CURRENT run is compared against")
    comparisons: list[ComparisonDocument]


class CheckDocument(Document):
    """`check --format json`: a run against its scenarios' expectations."""

    schema_version: int = version_field(CHECK_SCHEMA_VERSION, "check report")
    passed: bool
    failures: int = Field(description="checks that failed")
    improvements: int
    notes: list[str]
    checks: list[CheckRecord]


# ---------------------------------------------------------------------------------------- environment


class EnvironmentDocument(BaseModel):
    """`env --format json`: the host, and the GPU where one is usable (its keys as results.json's
    ``environment`` holds them)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    schema_version: int = version_field(ENV_SCHEMA_VERSION, "environment")
    host: dict[str, str | int | None] = Field(description="CPU model, cores, platform, hostname, kernel")
    python: str
    launchbench: str
    git_commit: str | None
    time: str = Field(description="when the environment was read (ISO 8601, UTC)")
    gpu: dict[str, object] | None = Field(None, description="the GPU's name, UUID, placement (null: none)")
    driver: str | None = None
    cuda_driver: str | None = None
    cuda_runtime: str | None = None
    cupy: str | None = None
    cupy_build: str | None = Field(None, description="the distribution that installs CuPy, e.g. cupy-cuda13x")
    cuda_bindings: str | None = None
    numpy: str | None = None
    nccl: str | None = None
    device_count: int | None = None
    clocks: dict[str, float | int | None] | None = None
    nvml: bool | None = None
    capture_timing: str | None = None
    gpu_problem: str | None = Field(description="why no GPU is usable (null: one is)")


# -------------------------------------------------------------------------------------------- history


class HistoryRun(Document):
    run_id: int
    name: str
    started: str = Field(description="ISO 8601")
    status: str
    scenarios: str
    gpu_name: str | None
    gpu_uuid: str | None
    driver: str | None
    cuda_runtime: str | None
    cupy: str | None
    launchbench_version: str | None
    git_commit: str | None
    git_branch: str | None
    host: str | None
    ab_id: str | None
    ab_side: str | None
    run_dir: str


class HistoryTrendPoint(Document):
    run_id: int
    name: str
    started: str = Field(description="ISO 8601")
    metric: str
    median: OptionalFloat = Field(description="the row's pooled median in this run, in the metric's unit")
    ci_low: OptionalFloat
    ci_high: OptionalFloat
    passes: int
    n: int
    host_bound: bool
    sm_mhz: OptionalFloat
    load_1m: OptionalFloat
    gpu_name: str | None
    driver: str | None
    cupy: str | None
    git_commit: str | None
    run_dir: str


class HistoryChange(Document):
    scenario: str
    case: str
    mode: str
    metric: str
    run_before: str
    run_after: str
    started_after: str = Field(description="ISO 8601")
    runs_before: int
    runs_after: int
    value_before: OptionalFloat = Field(description="geometric mean of the runs before, metric's unit")
    value_after: OptionalFloat
    step_pct: OptionalFloat = Field(description="value_after / value_before − 1, percent")
    step_ci_low_pct: OptionalFloat
    step_ci_high_pct: OptionalFloat
    p_value: OptionalFloat
    host_bound: bool
    environment_changes: str = Field(description="the environment fields that changed at the step")
    run_dir_before: str
    run_dir_after: str


class HistoryRunsDocument(Document):
    """`history list --format json`."""

    schema_version: int = version_field(HISTORY_SCHEMA_VERSION, "history list")
    title: str
    runs: list[HistoryRun]


class HistoryTrendDocument(Document):
    """`history trend --format json`."""

    schema_version: int = version_field(HISTORY_SCHEMA_VERSION, "history trend")
    title: str
    points: list[HistoryTrendPoint]


class HistoryChangesDocument(Document):
    """`history changes --format json`."""

    schema_version: int = version_field(HISTORY_SCHEMA_VERSION, "history changes")
    title: str
    changes: list[HistoryChange]


def to_json(document: BaseModel) -> str:
    """A document as the text launchbench prints: indented, UTF-8 as is, a newline at the end."""
    return document.model_dump_json(indent=1) + "\n"
