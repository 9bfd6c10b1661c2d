"""The results.json schema (pydantic models) and the metrics that results.csv summarises.

Everything inside is in seconds and bytes; results.csv converts to the units its column names say.
The unit of storage is the pass: each mode of a case holds one ``ModePass`` per pass over the run, with
that pass's samples, iterations per sample, SM clock readings and host data. ``ModeResult.samples`` and
``ModeResult.pass_sizes`` are the pooled view of the passes that the statistics read.

Field constraints (types, ranges, finiteness) hold for every record; ``store.load_run`` validates files
strictly (no numbers given as text) and adds the checks across fields (``record_problems``).

Schema changelog (bump SCHEMA_VERSION for every change and add a line here; store.py migrates older
files forward and refuses newer ones):
  1 — first version: environment, scenarios, settings, cases with per-mode raw samples (pooled over
      passes, with the number each pass contributed), graph life cycle per pass, correctness check,
      clocks, harness cost.
  2 — the pass as the unit of storage: each mode's ``passes`` list holds per pass its samples,
      iters_per_sample, throttled_samples, target_met, graph life cycle, SM clock readings and host data
      (worker pid, load average). The mode-level ``samples``, ``pass_sizes``, ``iters_per_sample``,
      ``throttled_samples``, ``target_met``, ``lifecycle`` and ``lifecycle_passes`` are derived, not
      stored. Migrated v1 files: every pass gets the mode's iters_per_sample and target_met, the
      throttled count sits on the first pass, clock readings and host data are empty. The run-level
      ``journal_bytes`` says how much of the run's journal (results.journal.jsonl) the file holds.
  3 — shape-changing chains: the modes ``recapture``, ``cache`` and ``update`` beside eager and graph;
      a case's ``shapes`` (the parameter, its values in the order they come, iterations per shape) and a
      pass's ``shapes`` (iterations, shape changes, setup time at the changes, graph updates, refusals
      with why they happened, re-captures, cache hits and misses). Both are absent (not
      null) on other cases, so a v2 file reads as v3 with nothing else changed.
  4 — the graph life cycle's ``instantiate_upload_s`` (cudaGraphInstantiateWithParams with
      cudaGraphInstantiateFlagUpload, until the upload is done) and ``instantiate_then_upload_s`` (the
      same slot instantiated, then uploaded), on fresh captures in random order; a pass's ``ranks``: for a
      case on several GPUs, each rank's own series (the pass's series are then the whole step: per
      sample, the slowest rank). All absent (not null, not empty) where not measured, so a v3 file reads
      as v4 with nothing else changed.
  5 — a pass's ``canary``: the worker's fixed reference (a 100-node graph of empty kernels replayed, and
      100 eager empty launches) read when the worker started, before the case and after it, and whether
      the case was measured in a disturbed state (the graph reading after it moved beyond the bound
      from the start); a pass's ``host.start`` and ``host.end`` (where the launching thread ran as the
      pass began and ended: CPU, its MHz and governor, NUMA node, SMT siblings) and ``host.gpu_node``; a
      case's ``extra_passes`` (passes added beyond the planned ones for its host levels); the run's
      ``settings`` hold ``max_cases`` where a case limit was given. All absent where not measured, so a
      v4 file reads as v5 with nothing else changed.
  6 — a mode's ``levels``: per raw series whose pass medians needed the host-level rule's mixture fit,
      how the fit split the passes (each level's passes, the passes apart) and a digest of the pass
      medians it was found on, so that a reader takes the split instead of fitting again
      (results.level_splits). Absent where no series needed a fit, so a v5 file reads as v6 with
      nothing else changed; a split whose digest does not match its series' pass medians is not used.
"""

from __future__ import annotations

import statistics
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from launchbench.results.metadata import Environment, Settings
from launchbench.results.metrics import (  # noqa: F401  (re-exported: the modes, series and metrics belong to the schema)
    ALL_MODES,
    CPU,
    GPU,
    LATENCY,
    MEASURED_STATUSES,
    METRIC_BY_NAME,
    METRICS,
    MODES,
    SAMPLE_KEYS,
    SHAPE_MODES,
    SPREAD_SUFFIXES,
    TORCH_MODES,
    WALL,
    Metric,
    Mode,
    SampleKey,
)

SCHEMA_VERSION = 6
TOOL_NAME = "launchbench"


MAX_WHOLE = 2**53  # the largest whole number a float holds exactly: every count is at most this
MAX_DURATION_S = 1e7  # about 116 days: no duration launchbench records is longer
Seconds = Annotated[float, Field(ge=0, le=MAX_DURATION_S)]  # may be zero (a CPU or GPU share, a setup step)
PositiveSeconds = Annotated[float, Field(gt=0, le=MAX_DURATION_S)]  # cannot be zero (wall time, latency)
Count = Annotated[int, Field(ge=0, le=MAX_WHOLE)]
PositiveCount = Annotated[int, Field(ge=1, le=MAX_WHOLE)]
Megahertz = Annotated[float, Field(gt=0, le=1e5)]  # a clock reading: no chip runs at 100 GHz
SERIES_MINIMUM: dict[str, float] = {WALL: 0.0, LATENCY: 0.0}  # series whose samples must be above zero


class _Frozen(BaseModel):
    # defer_build: each model's validator is built when it is first used (a worker never builds RunRecord's)
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, defer_build=True)


class GraphLifecycle(_Frozen):
    """The graph's own costs. ``split`` says whether capture and instantiate were timed separately
    (capture driven through cuda.bindings on CuPy's stream) or together (CuPy's end_capture instantiates)."""

    split: bool
    capture_s: Seconds
    instantiate_s: Seconds | None
    upload_s: Seconds
    first_launch_s: Seconds
    nodes: Count | None
    mem_bytes: Count | None
    # on fresh captures of the chain, in random order, each until the upload is done: instantiated with
    # cudaGraphInstantiateFlagUpload, and instantiated then uploaded (the pair to compare)
    instantiate_upload_s: Seconds | None = Field(None, exclude_if=lambda value: value is None)
    instantiate_then_upload_s: Seconds | None = Field(None, exclude_if=lambda value: value is None)
    # device memory the graph's memory pool holds once captured: CuPy's graph pool (its bytes in use and
    # cached), or torch's private pool (torch.cuda.memory_reserved's growth over capture)
    pool_bytes: Count | None = Field(None, exclude_if=lambda value: value is None)

    @property
    def setup_s(self) -> float:
        """What a graph costs before it pays off: capture + instantiate + upload."""
        return self.capture_s + (self.instantiate_s or 0.0) + self.upload_s


def median_lifecycle(passes: list[GraphLifecycle]) -> GraphLifecycle:
    """One life cycle for several passes: the median of each cost."""

    def med(values: list[float | int | None]) -> float | None:
        known = [v for v in values if v is not None]
        return statistics.median(known) if known else None

    nodes = med([p.nodes for p in passes])
    mem = med([p.mem_bytes for p in passes])
    return GraphLifecycle(
        split=passes[0].split,
        capture_s=statistics.median(p.capture_s for p in passes),
        instantiate_s=med([p.instantiate_s for p in passes]),
        upload_s=statistics.median(p.upload_s for p in passes),
        first_launch_s=statistics.median(p.first_launch_s for p in passes),
        nodes=None if nodes is None else int(nodes),
        mem_bytes=None if mem is None else int(mem),
        instantiate_upload_s=med([p.instantiate_upload_s for p in passes]),
        instantiate_then_upload_s=med([p.instantiate_then_upload_s for p in passes]),
        pool_bytes=_whole(med([p.pool_bytes for p in passes])),
    )


def _whole(value: float | None) -> int | None:
    return None if value is None else int(value)


def _absent(value: Any) -> bool:
    return value is None


def _empty(value: Any) -> bool:
    return not value


class ShapeCounts(_Frozen):
    """What a mode of a shape-changing case did in one pass: every iteration it ran after the priming
    cycle that visits each shape once (warm-up, calibration, samples and latency iterations together)."""

    iterations: Count
    changes: Count  # shape changes among those iterations
    setup_s: Seconds  # host wall time spent at the changes: capture, instantiate, upload, update
    updates: Count = 0  # cudaGraphExecUpdate calls that succeeded
    update_refusals: Count = 0  # cudaGraphExecUpdate calls refused (each followed by a re-capture)
    recaptures: Count = 0  # graphs captured and instantiated at a change (cache misses and refusals included)
    cache_hits: Count = 0
    cache_misses: Count = 0
    refusal_reasons: dict[str, Count] = Field(default_factory=dict)  # why (backend/shapes.py) → count

    @property
    def setup_s_per_change(self) -> float | None:
        return self.setup_s / self.changes if self.changes else None

    def __add__(self, other: ShapeCounts) -> ShapeCounts:
        reasons = dict(self.refusal_reasons)
        for reason, count in other.refusal_reasons.items():
            reasons[reason] = reasons.get(reason, 0) + count
        return ShapeCounts(
            iterations=self.iterations + other.iterations,
            changes=self.changes + other.changes,
            setup_s=self.setup_s + other.setup_s,
            updates=self.updates + other.updates,
            update_refusals=self.update_refusals + other.update_refusals,
            recaptures=self.recaptures + other.recaptures,
            cache_hits=self.cache_hits + other.cache_hits,
            cache_misses=self.cache_misses + other.cache_misses,
            refusal_reasons=reasons,
        )


class ShapeInfo(_Frozen):
    """How a shape-changing case's sizes change: ``param`` takes ``values`` in this order, ``per_shape``
    iterations each, and the sequence repeats; ``launches`` per iteration at each value."""

    param: str
    values: list[float | int] = Field(min_length=2)
    per_shape: PositiveCount
    order: Literal["cycle", "shuffle"] = "cycle"
    cache_limit: PositiveCount | None = None
    launches: list[PositiveCount] = Field(default_factory=list)

    @property
    def distinct(self) -> int:
        return len(self.values)


class PassClocks(_Frozen):
    """The GPU's clocks while one mode was sampled in one pass."""

    sm_mhz: list[Megahertz] = Field(default_factory=list)  # NVML SM clock after each round
    throttle_reasons: list[str] = Field(default_factory=list)


class ThreadPlace(_Frozen):
    """Where the launching thread ran at one moment (Linux; each field None where it cannot be read)."""

    cpu: Count | None = None  # the CPU number (/proc/thread-self/stat)
    mhz: Annotated[float, Field(gt=0)] | None = None  # its current frequency (cpufreq or /proc/cpuinfo)
    governor: str | None = None  # that CPU's cpufreq scaling governor
    node: Count | None = None  # that CPU's NUMA node
    siblings: str | None = None  # the CPUs sharing its core (SMT), as the kernel lists them ("3,67")


class HostData(_Frozen):
    """The host process that measured a pass, and where its launching thread ran as the pass began and
    ended; ``gpu_node`` is the GPU's NUMA node. The places are absent (not null) where not recorded."""

    pid: PositiveCount | None = None  # the worker process (the run's own process in-process)
    load_1m: Annotated[float, Field(ge=0, le=MAX_WHOLE)] | None = (
        None  # the host's 1-minute load average as the pass began
    )
    start: ThreadPlace | None = Field(None, exclude_if=_absent)
    end: ThreadPlace | None = Field(None, exclude_if=_absent)
    gpu_node: Count | None = Field(None, exclude_if=_absent)


class CanaryReading(_Frozen):
    """One reading of a worker's fixed reference: a 100-node graph of empty kernels replayed back to back
    (seconds per node, the GPU's own per-node cost) and 100 eager empty-kernel launches (seconds per
    launch, the launching thread's cost)."""

    graph_s_per_node: PositiveSeconds
    eager_s_per_launch: PositiveSeconds


class CanaryCheck(_Frozen):
    """The reference read around one case-pass: when its worker started, just before the case and just
    after it (once the case's graphs, streams' work and buffers were released). ``disturbed``: the graph
    reading after the case had moved beyond the run's bound from the worker's start, so the case was
    measured in a state that a fresh process does not have (its worker was replaced). The eager reading
    is recorded beside it: the host's launch-cost level around the case."""

    start: CanaryReading
    before: CanaryReading
    after: CanaryReading
    disturbed: bool = False

    @property
    def graph_shift(self) -> float:
        """Relative change of the graph reading from the worker's start to after the case."""
        return self.after.graph_s_per_node / self.start.graph_s_per_node - 1.0

    @property
    def eager_shift(self) -> float:
        """Relative change of the eager reading from the worker's start to after the case."""
        return self.after.eager_s_per_launch / self.start.eager_s_per_launch - 1.0


class RankSamples(_Frozen):
    """One rank of a case on several GPUs, in one pass: its own series (seconds per iteration), sample
    for sample beside the pass's whole-step series."""

    rank: Count
    device: Count
    samples: dict[str, list[float]] = Field(default_factory=dict)


class ModePass(_Frozen):
    """One mode of a case measured in one pass: the samples of each series (seconds per iteration; every
    series holds one sample per throughput sample, or none where the backend has no such time)."""

    iters_per_sample: PositiveCount
    samples: dict[str, list[float]] = Field(default_factory=dict)
    throttled_samples: Count = 0
    target_met: bool = False
    lifecycle: GraphLifecycle | None = None
    clocks: PassClocks = Field(default_factory=PassClocks)
    host: HostData = Field(default_factory=HostData)
    shapes: ShapeCounts | None = Field(None, exclude_if=_absent)
    ranks: list[RankSamples] = Field(default_factory=list, exclude_if=_empty)  # several GPUs: each rank's own
    canary: CanaryCheck | None = Field(None, exclude_if=_absent)  # the worker's reference around this pass

    @property
    def size(self) -> int:
        """Throughput samples this pass took (the length of its wall-time series)."""
        return len(self.samples.get(WALL, []))


class LevelSplit(_Frozen):
    """How the host-level rule (launchbench.measure.levels) split one raw series' pass medians:
    ``levels`` holds each level's passes (indices in run order, lowest level first; one or two levels),
    ``apart`` the passes sitting apart from a single level, ``medians`` a digest of the pass medians
    (seconds) the split was found on (results.level_splits.medians_digest)."""

    medians: str = Field(pattern=r"^[0-9a-f]{16}$")
    levels: list[list[Count]] = Field(min_length=1, max_length=2)
    apart: list[Count] = Field(default_factory=list, exclude_if=_empty)


class ModeResult(_Frozen):
    mode: Mode
    status: Literal["ok", "budget", "not_capturable", "failed", "skipped"]
    reason: str | None = None
    passes: list[ModePass] = Field(default_factory=list)
    # per raw series (WALL, CPU, GPU, LATENCY) whose levels needed a fit: the fit's split
    levels: dict[SampleKey, LevelSplit] = Field(default_factory=dict, exclude_if=_empty)

    @classmethod
    def pooled(
        cls,
        mode: Mode,
        status: Literal["ok", "budget", "not_capturable", "failed", "skipped"],
        samples: dict[str, list[float]],
        pass_sizes: list[int] | None = None,
        iters_per_sample: int = 1,
        target_met: bool = False,
        lifecycle: GraphLifecycle | None = None,
        reason: str | None = None,
    ) -> ModeResult:
        """A mode from pooled samples, split into passes of ``pass_sizes`` (one pass when None)."""
        sizes = list(pass_sizes) if pass_sizes else [len(samples.get(WALL, []))]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        passes = [
            ModePass(
                iters_per_sample=iters_per_sample,
                samples={
                    key: list(values[start : start + size]) for key, values in samples.items() if values
                },
                target_met=target_met,
                lifecycle=lifecycle,
            )
            for start, size in zip(starts, sizes, strict=True)
        ]
        return cls(mode=mode, status=status, reason=reason, passes=passes)

    def with_samples(self, samples: dict[str, list[float]]) -> ModeResult:
        """This mode with other pooled samples, split along the same pass sizes."""
        sizes = self.pass_sizes or [len(samples.get(WALL, []))]
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        passes = self.passes or [ModePass(iters_per_sample=1)]
        return self.model_copy(
            update={
                "passes": [
                    p.model_copy(
                        update={
                            "samples": {k: list(v[start : start + size]) for k, v in samples.items() if v}
                        }
                    )
                    for p, start, size in zip(passes, starts, sizes, strict=True)
                ]
            }
        )

    def pass_medians(self, key: str) -> list[float]:
        """The median of each pass's samples of one series, in run order (passes without it left out)."""
        return [statistics.median(p.samples[key]) for p in self.passes if p.samples.get(key)]

    def pooled_series(self, key: str) -> list[float]:
        """One series' samples pooled, pass after pass (``samples[key]``, without pooling the others)."""
        pooled: list[float] = []
        for p in self.passes:
            pooled.extend(p.samples.get(key, ()))
        return pooled

    @property
    def samples(self) -> dict[str, list[float]]:
        """Every pass's samples pooled, pass after pass."""
        pooled: dict[str, list[float]] = {}
        for p in self.passes:
            for key, values in p.samples.items():
                pooled.setdefault(key, []).extend(values)
        return pooled

    @property
    def pass_sizes(self) -> list[int]:
        """Samples per series contributed by each pass, in order (empty for a single pass)."""
        return [p.size for p in self.passes] if len(self.passes) > 1 else []

    @property
    def iters_per_sample(self) -> int:
        return self.passes[0].iters_per_sample if self.passes else 0

    @property
    def throttled_samples(self) -> int:
        return sum(p.throttled_samples for p in self.passes)

    @property
    def target_met(self) -> bool:
        return bool(self.passes) and all(p.target_met for p in self.passes)

    @property
    def disturbed_passes(self) -> int:
        """Passes measured in a disturbed state (their canary moved beyond its bounds)."""
        return sum(1 for p in self.passes if p.canary is not None and p.canary.disturbed)

    @property
    def canary_checks(self) -> list[CanaryCheck]:
        return [p.canary for p in self.passes if p.canary is not None]

    @property
    def lifecycle_passes(self) -> list[GraphLifecycle]:
        return [p.lifecycle for p in self.passes if p.lifecycle is not None]

    @property
    def shape_counts(self) -> ShapeCounts | None:
        """A shape-changing mode's counts, summed over its passes (None for other modes)."""
        counts = [p.shapes for p in self.passes if p.shapes is not None]
        if not counts:
            return None
        total = counts[0]
        for more in counts[1:]:
            total = total + more
        return total

    @property
    def lifecycle(self) -> GraphLifecycle | None:
        """The graph's life cycle: the one pass's, or the median over passes."""
        lifecycles = self.lifecycle_passes
        if not lifecycles:
            return None
        return lifecycles[0] if len(lifecycles) == 1 else median_lifecycle(lifecycles)


class Clocks(_Frozen):
    sm_mhz: Megahertz | None = None
    mem_mhz: Megahertz | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    settle_s: Seconds | None = None


class CaseResult(_Frozen):
    scenario: str
    case_id: str
    chain: str
    kinds: str
    params: dict[str, Any] = Field(default_factory=dict)
    launches_per_iter: PositiveCount
    modes: dict[Mode, ModeResult] = Field(default_factory=dict)
    outputs_match: bool | None = None
    check_detail: str | None = None
    clocks: Clocks = Field(default_factory=Clocks)
    harness_s_per_iter: Seconds | None = None
    elapsed_s: Seconds = 0.0
    error: str | None = None
    error_kind: Literal["input", "runtime", "mismatch", "resources"] | None = None
    passes_done: PositiveCount = 1
    shapes: ShapeInfo | None = Field(None, exclude_if=_absent)
    # passes added beyond the planned ones because a host level held too few (launchbench.run.extra_passes)
    extra_passes: Count = Field(0, exclude_if=_empty)

    # in a merged run: the member run (its node and CUDA device) that measured the case
    node: str | None = Field(None, exclude_if=_absent)
    device: Annotated[int, Field(ge=0)] | None = Field(None, exclude_if=_absent)

    @property
    def disturbed_passes(self) -> int:
        """Passes of this case measured in a disturbed state (the same for each of its modes)."""
        return max((m.disturbed_passes for m in self.modes.values()), default=0)

    @property
    def first_host(self) -> HostData | None:
        """The host data of the case's first pass (in mode order) that names the process measuring it."""
        return next((p.host for m in self.modes.values() for p in m.passes if p.host.pid is not None), None)

    @property
    def member_key(self) -> tuple[str, str, str | None, int | None]:
        """The case's identity in a merged run: scenario, case id, node and device."""
        return (self.scenario, self.case_id, self.node, self.device)

    def pass_sizes(self, mode: str) -> list[int] | None:
        result = self.modes.get(mode)  # type: ignore[call-overload]
        return list(result.pass_sizes) if result is not None and len(result.pass_sizes) > 1 else None

    def samples(self, mode: str, key: str) -> np.ndarray:
        result = self.modes.get(mode)  # type: ignore[call-overload]
        if result is None:
            return np.array([], dtype=float)
        return np.asarray(result.pooled_series(key), dtype=float)

    def metric_samples(self, mode: str, metric: str | Metric) -> np.ndarray:
        """Raw samples of a metric in its unit (µs, per launch where the metric says so)."""
        m = METRIC_BY_NAME[metric] if isinstance(metric, str) else metric
        return self.samples(mode, m.sample_key) * m.scale(self.launches_per_iter)


class ScenarioInfo(_Frozen):
    name: str
    description: str
    file: str
    sha256: str


class MemberRun(_Frozen):
    """One run merged into this one: a shard, a node's run or a device's run."""

    node: str  # the host's name (environment host.hostname), or the run directory's name where unknown
    device: Annotated[int, Field(ge=0)] | None = None  # the CUDA device index it ran on
    shard: str | None = None  # "K/N" where the run measured a shard of the cases
    source: str  # the run directory it was read from
    environment: Environment = Field(default_factory=Environment)


class RunRecord(_Frozen):
    schema_version: int = SCHEMA_VERSION
    tool: str = TOOL_NAME
    launchbench_version: str
    status: Literal["running", "complete", "interrupted", "failed"] = "running"
    started: str
    finished: str | None = None
    argv: list[str] = Field(default_factory=list)
    environment: Environment = Field(default_factory=Environment)
    settings: Settings = Field(default_factory=Settings)
    scenarios: list[ScenarioInfo] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)
    journal_bytes: Count | None = (
        None  # in results.json: bytes of results.journal.jsonl it holds (None once read)
    )
    members: list[MemberRun] = Field(default_factory=list, exclude_if=_empty)  # a merged run's parts

    def case(self, scenario: str, case_id: str) -> CaseResult | None:
        return next((c for c in self.cases if (c.scenario, c.case_id) == (scenario, case_id)), None)

    def canary_checks(self) -> list[tuple[str, CanaryCheck]]:
        """Every case-pass's canary check, with its case's id: one per case-pass, from the case's first
        mode (every mode of a case-pass carries the same reading)."""
        return [
            (c.case_id, k) for c in self.cases if c.modes for k in next(iter(c.modes.values())).canary_checks
        ]

    def with_case(self, case: CaseResult) -> RunRecord:
        """The record with this case added, or replaced in place where an earlier pass recorded it."""
        key = (case.scenario, case.case_id)
        if any((c.scenario, c.case_id) == key for c in self.cases):
            return self.model_copy(
                update={"cases": [case if (c.scenario, c.case_id) == key else c for c in self.cases]}
            )
        return self.model_copy(update={"cases": [*self.cases, case]})

    @property
    def gpu_name(self) -> str:
        return self.environment.gpu.name or "unknown GPU"


Location = tuple[str | int, ...]


def _rank_problems(one: ModePass, where: Location) -> list[tuple[Location, str]]:
    """A pass's rank series: known series, one sample per whole-step sample, ranks named once."""
    problems: list[tuple[Location, str]] = []
    seen: set[int] = set()
    for k, rank in enumerate(one.ranks):
        if rank.rank in seen:
            problems.append(((*where, k, "rank"), f"rank {rank.rank} appears twice in this pass"))
        seen.add(rank.rank)
        for series, values in rank.samples.items():
            if series not in SAMPLE_KEYS:
                problems.append(
                    ((*where, k, "samples", series), f"unknown series (known: {', '.join(SAMPLE_KEYS)})")
                )
            elif len(values) != len(one.samples.get(series, [])):
                problems.append(
                    (
                        (*where, k, "samples", series),
                        f"holds {len(values)} samples; the pass's {series} holds {len(one.samples.get(series, []))}",
                    )
                )
            elif any(not v >= 0 for v in values):
                problems.append(((*where, k, "samples", series), "samples must be zero or more"))
    return problems


def record_problems(record: RunRecord) -> list[tuple[Location, str]]:
    """What the field constraints cannot see: series lengths that disagree within a pass, samples at or
    below a series' minimum, more passes than the case says it ran, case ids used twice. Each problem
    comes with its location in the record (a JSON path as a tuple) and a message."""
    problems: list[tuple[Location, str]] = []
    seen: dict[tuple[str, str, str | None, int | None], int] = {}
    for i, case in enumerate(record.cases):
        key = case.member_key
        if key in seen:
            on = "" if case.node is None else f" on node '{case.node}' device {case.device}"
            problems.append(
                (
                    ("cases", i, "case_id"),
                    f"case '{case.case_id}' of scenario '{case.scenario}'{on} is also cases[{seen[key]}]",
                )
            )
        seen.setdefault(key, i)
        for name, mode in case.modes.items():
            if mode.mode != name:
                problems.append(
                    (("cases", i, "modes", name, "mode"), f"is '{mode.mode}' under the key '{name}'")
                )
            if len(mode.passes) > case.passes_done:
                problems.append(
                    (
                        ("cases", i, "modes", name, "passes"),
                        f"holds {len(mode.passes)} passes; the case ran {case.passes_done}",
                    )
                )
            for j, one in enumerate(mode.passes):
                where: Location = ("cases", i, "modes", name, "passes", j, "samples")
                size = one.size
                for series, values in one.samples.items():
                    if series not in SAMPLE_KEYS:
                        problems.append(
                            ((*where, series), f"unknown series (known: {', '.join(SAMPLE_KEYS)})")
                        )
                        continue
                    if values and len(values) != size:
                        problems.append(
                            ((*where, series), f"holds {len(values)} samples; {WALL} holds {size}")
                        )
                    floor = SERIES_MINIMUM.get(series)
                    lowest = min(values) if values else None
                    if lowest is None or (lowest >= 0 if floor is None else lowest > floor):
                        continue  # the usual case, decided at C speed
                    low = [k for k, v in enumerate(values) if v < 0 or (floor is not None and v <= floor)]
                    if low:
                        bound = "above zero" if floor is not None else "zero or more"
                        problems.append(
                            ((*where, series, low[0]), f"must be {bound} (got {values[low[0]]!r})")
                        )
                problems += _rank_problems(one, ("cases", i, "modes", name, "passes", j, "ranks"))
    return problems
