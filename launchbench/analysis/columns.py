"""Every results.csv column, declared once: its name, unit, group, meaning and how its value is computed
from one row's facts (``Column.value`` over a ``RowFacts``: the case, the mode's result and what
launchbench.analysis.table derives from their samples). The table builds each row from ``DECLARED``
and docs/columns.md is generated from it (scripts/docs.py). Groups, in the file's order: the id
columns, each timing metric followed by its spread columns, the graph, check and shape columns, the
host-level columns of LEVEL_METRICS and the fleet columns. Light to import (no numpy, pandas or SciPy):
`validate` and the expectation checks read it."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from launchbench.results.metrics import METRICS, SPREAD_SUFFIXES

if TYPE_CHECKING:
    from launchbench.results.schema import CaseResult, GraphLifecycle, ModeResult, ShapeCounts


class RowFacts(Protocol):
    """What a row's values are computed from (launchbench.analysis.table.RowFactsOf makes them)."""

    case: CaseResult
    mode: str
    result: ModeResult
    gpu_name: str
    node: str | None
    device: int | None

    @property
    def host_bound(self) -> bool: ...
    @property
    def graph_life(self) -> GraphLifecycle | None: ...  # a graph row's lifecycle (None for other modes)
    @property
    def speedup(self) -> float | None: ...
    @property
    def break_even_iters(self) -> float | None: ...
    @property
    def rank_walls(self) -> str | None: ...
    def summary(self, metric: str) -> Any: ...  # analysis.stats.Summary of the metric's samples
    def levels(self, metric: str) -> Any: ...  # measure.levels.Levels of the metric's pass medians


@dataclass(frozen=True)
class Column:
    """One results.csv column. ``metric``: the timing metric a metric or level column summarises (the
    table leaves it out when that metric or the levels are not asked for)."""

    name: str
    unit: str
    group: str
    meaning: str
    value: Callable[[RowFacts], object]
    metric: str | None = None


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _life_us(facts: RowFacts, field: str) -> float | None:
    return None if facts.graph_life is None else _us(getattr(facts.graph_life, field))


def _shape(facts: RowFacts, get: Callable[[ShapeCounts], object], mode: str | None = None) -> object:
    """A shape count of a chain whose sizes change (None otherwise, or for a mode it does not apply to)."""
    counts = facts.result.shape_counts
    if facts.case.shapes is None or counts is None or (mode is not None and facts.result.mode != mode):
        return None
    return get(counts)


def _largest_shift(shifts: list[float]) -> float | None:
    """The shift farthest from zero, in percent (None without any)."""
    return max(shifts, key=abs) * 100 if shifts else None


# fmt: off
ID_DECLARED: tuple[Column, ...] = (
    Column('scenario', '—', 'id', 'scenario name', lambda f: f.case.scenario),
    Column('case', '—', 'id', 'case id: chain name and the sweep values it was run with', lambda f: f.case.case_id),
    Column('chain', '—', 'id', 'chain name in the scenario', lambda f: f.case.chain),
    Column('kinds', '—', 'id', 'step kinds in the chain', lambda f: f.case.kinds),
    Column('params', '—', 'id', 'sweep values of the case (JSON)', lambda f: json.dumps(f.case.params, sort_keys=True)),
    Column('mode', '—', 'id', "eager (kernel by kernel on a stream), graph (CUDA Graph replay of CuPy's stream capture), torch_graph (torch.cuda.CUDAGraph replay, a chain holding torch steps); for a chain whose sizes change: recapture, cache or update (see docs/shapes.md)", lambda f: f.mode),
    Column('status', '—', 'id', "ok; budget (sampling ended before the noise target: the time budget or a pass precise against its row's spread between passes); not_capturable; failed; skipped", lambda f: f.result.status),
    Column('reason', '—', 'id', 'why a mode is not ok (capture refused, error message)', lambda f: f.result.reason or f.case.error or ""),
    Column('launches_per_iter', 'launches', 'id', 'kernel/copy/memset launches the chain issues per iteration', lambda f: f.case.launches_per_iter),
    Column('iters_per_sample', 'iterations', 'id', 'chain iterations timed together in one throughput sample', lambda f: f.result.iters_per_sample or None),
)
GRAPH_DECLARED: tuple[Column, ...] = (
    Column('speedup', '×', 'graph', "eager wall time per iteration / this mode's wall time per iteration (medians; every mode but eager)", lambda f: f.speedup),
    Column('capture_us', 'µs', 'graph', 'stream capture (with instantiation when lifecycle_split is false)', lambda f: _life_us(f, "capture_s")),
    Column('instantiate_us', 'µs', 'graph', 'cudaGraphInstantiate (empty when not split from capture)', lambda f: _life_us(f, "instantiate_s")),
    Column('upload_us', 'µs', 'graph', 'cudaGraphUpload', lambda f: _life_us(f, "upload_s")),
    Column('first_launch_us', 'µs', 'graph', 'first replay, launch to completion', lambda f: _life_us(f, "first_launch_s")),
    Column('setup_us', 'µs', 'graph', 'capture + instantiate + upload', lambda f: _life_us(f, "setup_s")),
    Column('instantiate_upload_us', 'µs', 'graph', 'cudaGraphInstantiateWithParams with cudaGraphInstantiateFlagUpload until the upload is done, on a fresh capture (empty when not split); compare with instantiate_then_upload_us', lambda f: _life_us(f, "instantiate_upload_s")),
    Column('instantiate_then_upload_us', 'µs', 'graph', 'cudaGraphInstantiate then cudaGraphUpload until done, on another fresh capture in the same slot as instantiate_upload_us (the two in random order)', lambda f: _life_us(f, "instantiate_then_upload_s")),
    Column('lifecycle_split', '—', 'graph', 'true when capture and instantiate were timed separately (cuda.bindings)', lambda f: None if f.graph_life is None else f.graph_life.split),
    Column('graph_nodes', 'nodes', 'graph', 'nodes in the captured graph', lambda f: None if f.graph_life is None else f.graph_life.nodes),
    Column('graph_mem_bytes', 'bytes', 'graph', "device memory the graph takes, from the driver's free memory (cudaMemGetInfo): graph, its instantiation and upload; torch_graph, its capture (the private pool's new segments) to the end of its first replay", lambda f: None if f.graph_life is None else f.graph_life.mem_bytes),
    Column('graph_pool_bytes', 'bytes', 'graph', "device memory the graph's memory pool holds: graph, CuPy's pool dedicated to the graph (temporaries of captured kernels); torch_graph, the growth of torch.cuda.memory_reserved over the capture (its private pool)", lambda f: None if f.graph_life is None else f.graph_life.pool_bytes),
    Column('break_even_iters', 'iterations', 'graph', 'setup_us / (eager − graph wall µs per iteration); empty if the graph is not faster', lambda f: f.break_even_iters),
)
CHECK_DECLARED: tuple[Column, ...] = (
    Column('outputs_match', '—', 'check', 'graph-written buffers equal eager-written ones (empty for eager rows when no graph)', lambda f: f.case.outputs_match),
    Column('target_met', '—', 'check', 'the noise target was reached before the time budget', lambda f: f.result.target_met),
    Column('throttled_samples', 'samples', 'check', 'samples taken while NVML reported a clock-throttle reason', lambda f: f.result.throttled_samples),
    Column('sm_clock_mhz', 'MHz', 'check', 'SM clock read through NVML during the case', lambda f: f.case.clocks.sm_mhz),
    Column('mem_clock_mhz', 'MHz', 'check', 'memory clock read through NVML during the case', lambda f: f.case.clocks.mem_mhz),
    Column('throttle_reasons', '—', 'check', 'NVML clock-event reasons seen during the case (idle excluded)', lambda f: ";".join(f.case.clocks.throttle_reasons)),
    Column('passes', 'passes', 'check', 'passes over the run in which the case was measured (samples pooled)', lambda f: f.case.passes_done),
    Column('host_bound', '—', 'check', "CPU time ≥ 80% of wall time: the row measures the host's launch cost (its noise is shrunk toward that of rows like it)", lambda f: f.host_bound),
    Column('harness_us_per_iter', 'µs', 'check', "the timing loop's own cost per iteration around an empty call", lambda f: _us(f.case.harness_s_per_iter)),
    Column('gpu_name', '—', 'check', 'GPU the case ran on', lambda f: f.gpu_name),
    Column('devices', 'GPUs', 'check', 'GPUs the case ran on, one rank (worker process) each', lambda f: max(1, len(f.result.passes[0].ranks)) if f.result.passes else 1),
    Column('rank_wall_us_per_iter', 'µs', 'check', "each rank's median wall time per iteration, rank 0 first, ';'-separated; the row's own wall columns are the whole step (per sample, the slowest rank); empty on one GPU", lambda f: f.rank_walls),
    Column('disturbed_passes', 'passes', 'check', "passes measured in a disturbed state: the worker's fixed reference (a 100-node graph replay) read after the case had moved more than 3% from the worker's start; its worker was replaced (empty where no reference was read)", lambda f: f.result.disturbed_passes if f.result.canary_checks else None),
    Column('canary_graph_shift_pct', '%', 'check', "largest change of the reference's graph reading (µs per node) from the worker's start to just after this case, over the row's passes", lambda f: _largest_shift([c.graph_shift for c in f.result.canary_checks])),
    Column('canary_eager_shift_pct', '%', 'check', "largest change of the reference's eager reading (µs per empty launch) from the worker's start to just after this case: the host's launch-cost level moving (recorded, bounds nothing)", lambda f: _largest_shift([c.eager_shift for c in f.result.canary_checks])),
)
SHAPE_DECLARED: tuple[Column, ...] = (
    Column('iterations_per_shape', 'iterations', 'shape', 'iterations at one shape before it changes (a chain whose sizes change, else empty)', lambda f: None if f.case.shapes is None else f.case.shapes.per_shape),
    Column('distinct_shapes', 'shapes', 'shape', 'distinct shapes the sequence cycles through', lambda f: None if f.case.shapes is None else f.case.shapes.distinct),
    Column('shape_changes', 'changes', 'shape', 'shape changes the mode went through over its passes (after a priming cycle through every shape)', lambda f: _shape(f, lambda c: c.changes)),
    Column('setup_us_per_change', 'µs', 'shape', "host time spent at a change (capture, instantiate, upload, update), per change; eager's is the bookkeeping alone", lambda f: _shape(f, lambda c: _us(c.setup_s_per_change))),
    Column('graph_updates', 'updates', 'shape', 'cudaGraphExecUpdate calls that succeeded (update)', lambda f: _shape(f, lambda c: c.updates, "update")),
    Column('update_refusals', 'updates', 'shape', 'cudaGraphExecUpdate calls refused; each fell back to a re-capture (update)', lambda f: _shape(f, lambda c: c.update_refusals, "update")),
    Column('update_refusal_reasons', '—', 'shape', 'why updates were refused (the cudaGraphExecUpdateResult, or the error and what differs between the graphs), with counts, as reason:count;reason:count', lambda f: _shape(f, lambda c: ";".join(f"{k}:{v}" for k, v in sorted(c.refusal_reasons.items())))),
    Column('recaptures', 'graphs', 'shape', 'graphs captured and instantiated at changes (recapture; cache misses; refused updates)', lambda f: None if f.mode == "eager" else _shape(f, lambda c: c.recaptures)),
    Column('cache_hits', 'changes', 'shape', 'changes to a shape whose graph the cache held (cache)', lambda f: _shape(f, lambda c: c.cache_hits, "cache")),
    Column('cache_misses', 'changes', 'shape', 'changes to a shape the cache did not hold: captured (cache)', lambda f: _shape(f, lambda c: c.cache_misses, "cache")),
)
LEVELS_DECLARED: tuple[Column, ...] = (
    Column('extra_passes', 'passes', 'levels', "passes added beyond the planned ones for the case's host levels (docs/methodology.md, Host levels)", lambda f: f.case.extra_passes),
)
FLEET_DECLARED: tuple[Column, ...] = (
    Column('node', '—', 'fleet', "host the case ran on (its environment's host name; in a merged run, the member run's)", lambda f: f.node),
    Column('device', '—', 'fleet', 'CUDA device index the case ran on', lambda f: f.device),
)
# fmt: on


def _summary_value(metric: str, field: str) -> Callable[[RowFacts], object]:
    return lambda facts: getattr(facts.summary(metric), field)


def metric_declared() -> tuple[Column, ...]:
    """Each timing metric's median, followed by its spread columns (SPREAD_SUFFIXES)."""
    out = []
    for metric in METRICS:
        out.append(
            Column(
                metric.name,
                "µs",
                "metric",
                f"median {metric.doc}",
                _summary_value(metric.name, "median"),
                metric.name,
            )
        )
        for suffix, meaning in SPREAD_SUFFIXES.items():
            unit = "—" if suffix in ("n", "outliers", "rel_ci", "rel_noise") else "µs"
            value = _summary_value(metric.name, suffix)
            out.append(Column(f"{metric.name}_{suffix}", unit, "metric", meaning, value, metric.name))
    return tuple(out)


def _level_of(side: int, field: str) -> Callable[[Any], object]:
    """A field of the lower (0) or higher (1) of two levels; None with one level."""
    return lambda levels: getattr(levels.levels[side], field) if levels.two else None


# The metrics whose host levels results.csv reports (analysis.host_levels), each with LEVEL_SUFFIXES:
# suffix → (unit, meaning, the value from the metric's Levels).
LEVEL_METRICS: tuple[str, ...] = ("wall_us_per_launch", "cpu_us_per_launch", "latency_us")
LEVEL_SUFFIXES: dict[str, tuple[str, str, Callable[[Any], object]]] = {
    "levels": (
        "levels",
        "host levels among the pass medians: 1 or 2 (docs/statistics.md, Host levels)",
        lambda levels: levels.count or None,
    ),
    **{
        column: described
        for side, (name, word) in enumerate((("low", "lower"), ("high", "higher")))
        for column, described in (
            (
                f"level_{name}",
                (
                    "µs",
                    f"the {word} level: the median of its passes' medians (empty with one level)",
                    _level_of(side, "center"),
                ),
            ),
            (
                f"level_{name}_share",
                ("—", f"share of the passes at the {word} level", _level_of(side, "share")),
            ),
        )
    },
    "passes_apart": (
        "passes",
        "passes that sit apart from the one level without forming a level of their own",
        lambda levels: len(levels.apart) if levels.count else None,
    ),
}


def _level_value(metric: str, get: Callable[[Any], object]) -> Callable[[RowFacts], object]:
    return lambda facts: get(facts.levels(metric))


def level_declared() -> tuple[Column, ...]:
    """Each level metric's LEVEL_SUFFIXES, then the levels group."""
    per_metric = tuple(
        Column(
            f"{metric}_{suffix}", unit, "levels", f"{metric}: {meaning}", _level_value(metric, get), metric
        )
        for metric in LEVEL_METRICS
        for suffix, (unit, meaning, get) in LEVEL_SUFFIXES.items()
    )
    return (*per_metric, *LEVELS_DECLARED)


DECLARED: tuple[Column, ...] = (
    *ID_DECLARED,
    *metric_declared(),
    *GRAPH_DECLARED,
    *CHECK_DECLARED,
    *SHAPE_DECLARED,
    *level_declared(),
    *FLEET_DECLARED,
)


def _described(columns: tuple[Column, ...]) -> dict[str, tuple[str, str]]:
    return {c.name: (c.unit, c.meaning) for c in columns}


# Column name → (unit, meaning), per group and for every column in the file's order.
SHAPE_COLUMNS = _described(SHAPE_DECLARED)
FLEET_COLUMNS = _described(FLEET_DECLARED)
COLUMNS: dict[str, tuple[str, str]] = _described(DECLARED)


def level_columns() -> dict[str, tuple[str, str]]:
    return _described(level_declared())
