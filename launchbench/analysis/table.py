"""results.csv: one row per case and mode, summarising the raw samples in the units the columns name
(COLUMNS, from launchbench.analysis.columns)."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from launchbench.analysis.columns import COLUMNS, GRAPH_COLUMNS, SHAPE_COLUMNS
from launchbench.analysis.drift import NoisePrior, RowVariance, fit_priors, is_host_bound, stratum
from launchbench.analysis.host_levels import level_columns
from launchbench.analysis.stats import Summary, log_pass_medians, summarize
from launchbench.results.schema import METRICS, WALL, CaseResult, Metric, ModeResult, RunRecord


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


def _us(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e6


def _rank_walls(result: ModeResult) -> str | None:
    """Each rank's median wall µs per iteration over the mode's passes, ';'-separated (None on one GPU)."""
    pooled: dict[int, list[float]] = {}
    for one in result.passes:
        for rank in one.ranks:
            pooled.setdefault(rank.rank, []).extend(rank.samples.get(WALL, []))
    if not pooled:
        return None
    return ";".join(f"{_median(np.asarray(pooled[r])) * 1e6:.4g}" for r in sorted(pooled))


def case_rows(
    case: CaseResult,
    gpu_name: str,
    priors: Mapping[tuple[str, bool], NoisePrior] | None = None,
    metrics: Sequence[Metric] = METRICS,
    levels: bool = True,
) -> list[dict[str, Any]]:
    """The case's rows; a multi-pass row's CI covers its pass noise, shrunk toward ``priors`` (noise_priors).
    Only ``metrics`` are summarised (the columns of the others stay empty); without ``levels`` the host
    level columns stay empty too."""
    rows: list[dict[str, Any]] = []
    eager_wall = _median(case.samples("eager", WALL))
    priors = priors or {}
    for mode, result in case.modes.items():
        host_bound = is_host_bound(case, mode)
        row: dict[str, Any] = {
            "scenario": case.scenario,
            "case": case.case_id,
            "chain": case.chain,
            "kinds": case.kinds,
            "params": json.dumps(case.params, sort_keys=True),
            "mode": mode,
            "status": result.status,
            "reason": result.reason or case.error or "",
            "launches_per_iter": case.launches_per_iter,
            "iters_per_sample": result.iters_per_sample or None,
        }
        for metric in metrics:
            samples, sizes = case.metric_samples(mode, metric), case.pass_sizes(mode)
            summary = summarize(samples, sizes)
            if sizes is not None:
                prior = priors.get(stratum(metric.name, host_bound))
                summary = widen_to_pass_noise(summary, log_pass_medians(samples, sizes), prior)
            row[metric.name] = summary.median
            for suffix, value in summary.as_dict().items():
                if suffix != "median":
                    row[f"{metric.name}_{suffix}"] = value
        row.update(_graph_columns(case, result, eager_wall))
        row.update(
            outputs_match=case.outputs_match,
            target_met=result.target_met,
            throttled_samples=result.throttled_samples,
            passes=case.passes_done,
            host_bound=host_bound,
            sm_clock_mhz=case.clocks.sm_mhz,
            mem_clock_mhz=case.clocks.mem_mhz,
            throttle_reasons=";".join(case.clocks.throttle_reasons),
            harness_us_per_iter=None if case.harness_s_per_iter is None else case.harness_s_per_iter * 1e6,
            gpu_name=gpu_name,
            devices=max(1, len(result.passes[0].ranks)) if result.passes else 1,
            rank_wall_us_per_iter=_rank_walls(result),
        )
        row.update(_shape_columns(case, result))
        row.update(level_columns(case, mode) if levels else {}, extra_passes=case.extra_passes)
        row.update(_canary_columns(result))
        rows.append(row)
    return rows


def _graph_columns(case: CaseResult, result: ModeResult, eager_wall: float) -> dict[str, Any]:
    """The graph columns of one row: the speedup of every mode but eager, and the life cycle of a graph
    mode (CuPy's capture, graph, or torch's, torch_graph) with its break-even; empty for eager."""
    out: dict[str, Any] = dict.fromkeys(GRAPH_COLUMNS)
    if result.mode == "eager":
        return out
    mode_wall = _median(case.samples(result.mode, WALL))
    if mode_wall > 0 and not math.isnan(eager_wall):
        out["speedup"] = eager_wall / mode_wall
    life = result.lifecycle
    if life is None:
        return out
    out.update(
        capture_us=life.capture_s * 1e6,
        instantiate_us=_us(life.instantiate_s),
        upload_us=life.upload_s * 1e6,
        first_launch_us=life.first_launch_s * 1e6,
        setup_us=life.setup_s * 1e6,
        instantiate_upload_us=_us(life.instantiate_upload_s),
        instantiate_then_upload_us=_us(life.instantiate_then_upload_s),
        lifecycle_split=life.split,
        graph_nodes=life.nodes,
        graph_mem_bytes=life.mem_bytes,
        graph_pool_bytes=life.pool_bytes,
    )
    saving = eager_wall - mode_wall
    if saving > 0:
        out["break_even_iters"] = life.setup_s / saving
    return out


def _largest_shift(shifts: list[float]) -> float | None:
    """The shift farthest from zero, in percent (None without any)."""
    return max(shifts, key=abs) * 100 if shifts else None


def _canary_columns(result: ModeResult) -> dict[str, Any]:
    """The worker's reference around this row's passes: passes measured in a disturbed state, and the
    largest moves of its graph and eager readings from the worker's start."""
    checks = result.canary_checks
    return {
        "disturbed_passes": result.disturbed_passes if checks else None,
        "canary_graph_shift_pct": _largest_shift([c.graph_shift for c in checks]),
        "canary_eager_shift_pct": _largest_shift([c.eager_shift for c in checks]),
    }


def _shape_columns(case: CaseResult, result: ModeResult) -> dict[str, Any]:
    """The shape columns of one row: empty for a chain of fixed sizes."""
    out: dict[str, Any] = dict.fromkeys(SHAPE_COLUMNS)
    if case.shapes is None:
        return out
    out.update(iterations_per_shape=case.shapes.per_shape, distinct_shapes=case.shapes.distinct)
    counts = result.shape_counts
    if counts is None:
        return out
    per_change = counts.setup_s_per_change
    out.update(
        shape_changes=counts.changes,
        setup_us_per_change=None if per_change is None else per_change * 1e6,
        graph_updates=counts.updates if result.mode == "update" else None,
        update_refusals=counts.update_refusals if result.mode == "update" else None,
        update_refusal_reasons=";".join(f"{k}:{v}" for k, v in sorted(counts.refusal_reasons.items())),
        recaptures=counts.recaptures if result.mode != "eager" else None,
        cache_hits=counts.cache_hits if result.mode == "cache" else None,
        cache_misses=counts.cache_misses if result.mode == "cache" else None,
    )
    return out


def _placement(run: RunRecord) -> dict[tuple[str | None, int | None], tuple[str, str | None, int | None]]:
    """Per (node, device) of a case: its GPU's name, node and device (a plain run's cases carry neither:
    the run's own host and --device)."""
    host = (
        run.environment.get("host", {}).get("hostname")
        if isinstance(run.environment.get("host"), dict)
        else None
    )
    device = run.settings.get("device")
    out: dict[tuple[str | None, int | None], tuple[str, str | None, int | None]] = {
        (None, None): (run.gpu_name, host, device if isinstance(device, int) else None)
    }
    for member in run.members:
        gpu = member.environment.get("gpu", {})
        name = str(gpu.get("name", "unknown GPU")) if isinstance(gpu, dict) else "unknown GPU"
        out[(member.node, member.device)] = (name, member.node, member.device)
    return out


def run_table(run: RunRecord, metrics: Sequence[Metric] = METRICS, levels: bool = True) -> pd.DataFrame:
    """results.csv's table of ``run``. With ``metrics``, only their columns are summarised; without
    ``levels``, no host levels (a mixture fit per row, scikit-learn's import): the figures need three
    metrics of seven and no levels, and those are most of the time and memory a large run's table takes."""
    priors = noise_priors(run, metrics)
    placement = _placement(run)
    rows = []
    for case in run.cases:
        gpu_name, node, device = placement.get(
            (case.node, case.device), (run.gpu_name, case.node, case.device)
        )
        for row in case_rows(case, gpu_name, priors, metrics, levels):
            rows.append({**row, "node": node, "device": device})
    frame = pd.DataFrame.from_records(rows, columns=list(COLUMNS))
    return frame.replace([math.inf, -math.inf], math.nan)
