"""Ingest a run directory into the history database: one transaction per run, idempotent.

A run is keyed by the sha256 of its results.json bytes: ingesting the same run again (or a copy of its
directory) adds nothing. Only finished runs are ingested: a run still being written (status
``running``) or interrupted (finish it with ``run --resume``) is refused, before the database is opened.
Per row it stores the pooled median and CI of each raw series (as results.csv reports them) and, per
pass, what results.json holds per pass: the pass's raw samples with the median of each series, iterations
per sample, throttled samples, target met, the graph life cycle, the SM clock readings and throttle
reasons, the host data, and a shape-changing case's counts at its shape changes.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import Any

import numpy as np
from sqlalchemy import insert, select

from launchbench.analysis.drift import HOST_BOUND_SHARE
from launchbench.history.db import DuplicateKey, HistoryDB, HistoryError
from launchbench.history.models import SERIES, PassResult, RowResult, Run
from launchbench.measure.precision import median_ci
from launchbench.results.merge_runs import refuse_repeated_cases
from launchbench.results.schema import (
    MEASURED_STATUSES,
    SAMPLE_KEYS,
    CaseResult,
    ModePass,
    ModeResult,
    RunRecord,
)
from launchbench.results.store import RESULTS_JSON, load_run


@dataclass(frozen=True)
class IngestOutcome:
    run_id: int
    content_hash: str
    created: bool  # False: the run was in the database already
    run_dir: str


@dataclass(frozen=True)
class LoadedRun:
    """A finished run read from its directory, with its content hash."""

    path: Path
    record: RunRecord
    content_hash: str


def read_run_dir(run_dir: str | Path) -> LoadedRun:
    """Read and check a run directory (raises ResultsFileError or HistoryError; touches no database)."""
    path = Path(run_dir)
    if not path.is_dir():
        raise HistoryError(f"{path}: not a directory; give a run directory (it holds {RESULTS_JSON})")
    record = load_run(path)  # not a run / truncated / corrupt / newer schema: ResultsFileError
    raw = (path / RESULTS_JSON).read_bytes()
    if record.status == "running":
        raise HistoryError(
            f"{path}: the run is half-written (status 'running'); ingest it once it has finished"
        )
    if record.status == "interrupted":
        raise HistoryError(
            f"{path}: the run was interrupted; finish it with 'launchbench run --resume {path}', then ingest it"
        )
    refuse_repeated_cases(record, path, "ingest each member's own run (the sources its members name)")
    return LoadedRun(path, record, hashlib.sha256(raw).hexdigest())


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def ab_fields(record: RunRecord) -> dict[str, str | None]:
    """A side of `launchbench ab`: the invocation's id and the side (A or B); None for other runs. A side
    whose settings carry no id gets one from the ab directory (the parent of both sides' directories), so
    its two sides still share it."""
    if not record.settings.recorded("ab"):
        return {"ab_id": None, "ab_side": None}
    ab = record.settings.ab
    ab_id = ab.id
    if not ab_id and ab.paired_with:
        parent = str(PurePath(ab.paired_with).parent)
        ab_id = hashlib.sha256(parent.encode()).hexdigest()[:12]
    return {"ab_id": ab_id or None, "ab_side": ab.side or None}


def run_environment(
    record: RunRecord, git_commit: str | None = None, git_branch: str | None = None
) -> dict[str, str | None]:
    env = record.environment
    return {
        "gpu_name": env.gpu.name,
        "gpu_uuid": env.gpu.uuid,
        "driver": env.driver,
        "cuda_runtime": env.cuda_runtime,
        "cupy": env.cupy,
        "launchbench_version": record.launchbench_version,
        "git_commit": git_commit or env.git_commit,
        "git_branch": git_branch or _text(env.extra.get("git_branch")),
        "host": env.host.hostname,
    }


@functools.lru_cache(maxsize=4096)
def _median_ci_ranks(n: int) -> tuple[int, int]:
    """0-based positions, in sorted order, of the median CI's bounds for n samples (stats.median_ci's
    interval of the ranks 1..n, cached: every row of a run asks for the same few n)."""
    low, high = median_ci(np.arange(1, n + 1))
    return int(low) - 1, int(high) - 1


def _median_ci(values: np.ndarray) -> tuple[float, float]:
    low, high = _median_ci_ranks(len(values))
    ordered = np.partition(values, (low, high))
    return float(ordered[low]), float(ordered[high])


@dataclass(frozen=True)
class RowValues:
    """One row's column values and its passes' column values (plain dicts: inserted in bulk)."""

    row: dict[str, Any]
    passes: list[dict[str, Any]]


def _pass_fields(one: ModePass) -> dict[str, Any]:
    """What a pass holds besides its samples."""
    readings = list(one.clocks.sm_mhz)
    return {
        "iters_per_sample": one.iters_per_sample,
        "throttled_samples": one.throttled_samples,
        "target_met": one.target_met,
        "lifecycle": one.lifecycle.model_dump() if one.lifecycle is not None else None,
        "sm_mhz": readings or None,
        "sm_mhz_median": float(np.median(readings)) if readings else None,
        "throttle_reasons": list(one.clocks.throttle_reasons) or None,
        "host_pid": one.host.pid,
        "host_load_1m": one.host.load_1m,
        "shapes": one.shapes.model_dump() if one.shapes is not None else None,
    }


def _kept_blocks(result: ModeResult) -> tuple[list[tuple[int, ModePass]], list[int], list[np.ndarray]]:
    """The passes that took samples (with their index), the series every one of them recorded, and each
    pass's samples as a series × n block (NaN where a series is not kept)."""
    measured = result.status in MEASURED_STATUSES
    kept = [(index, one) for index, one in enumerate(result.passes) if one.size > 0] if measured else []
    present = [
        i
        for i, key in enumerate(SAMPLE_KEYS)
        if kept and all(len(one.samples.get(key, ())) == one.size for _, one in kept)
    ]
    blocks = []
    for _, one in kept:
        block = np.full((len(SERIES), one.size), np.nan)
        for i in present:
            block[i] = one.samples[SAMPLE_KEYS[i]]
        blocks.append(block)
    return kept, present, blocks


def _series_columns(blocks: list[np.ndarray], pass_medians: np.ndarray, present: list[int]) -> dict[str, Any]:
    """Each series' pooled median and CI (results.csv's: widened to cover every pass's median)."""
    columns: dict[str, Any] = {
        f"{name}_{part}": None for name in SERIES for part in ("median", "ci_low", "ci_high")
    }
    if not blocks:
        return columns
    pooled_block = np.concatenate(blocks, axis=1)
    pooled = np.median(pooled_block, axis=1)
    for i in present:
        low, high = _median_ci(pooled_block[i])
        if len(blocks) > 1:
            low, high = (
                min(low, float(pass_medians[:, i].min())),
                max(high, float(pass_medians[:, i].max())),
            )
        name = SERIES[i]
        columns.update({f"{name}_median": float(pooled[i]), f"{name}_ci_low": low, f"{name}_ci_high": high})
    return columns


def _row(case: CaseResult, mode: str, result: ModeResult) -> RowValues:
    """One row with its passes (those that took samples). The row's CI of each series is results.csv's
    (stats.summarize): the order-statistic CI of the pooled median, widened to cover every pass's
    median. A series goes in where every pass recorded it."""
    kept, present, blocks = _kept_blocks(result)
    pass_medians = np.array([np.median(b, axis=1) for b in blocks])  # (passes, series)
    columns = _series_columns(blocks, pass_medians, present)
    wall_median, cpu_median = columns["wall_median"], columns["cpu_median"]
    host_bound = (
        wall_median is not None
        and cpu_median is not None
        and 0 < wall_median <= cpu_median / HOST_BOUND_SHARE
    )
    row = {
        "scenario": case.scenario,
        "case_id": case.case_id,
        "mode": mode,
        "status": result.status,
        "launches_per_iter": case.launches_per_iter,
        "host_bound": bool(host_bound),
        "passes": len(blocks),
        "n": int(sum(b.shape[1] for b in blocks)),
        **columns,
    }
    passes = []
    for (index, one), block, medians_of_pass in zip(kept, blocks, pass_medians):
        medians: dict[str, float | None] = {f"{name}_median": None for name in SERIES}
        medians.update({f"{SERIES[i]}_median": float(medians_of_pass[i]) for i in present})
        passes.append(
            {
                "pass_index": index,
                "n": one.size,
                "samples": np.ascontiguousarray(block, dtype="<f8").tobytes(),
                **medians,
                **_pass_fields(one),
            }
        )
    return RowValues(row, passes)


def build_run(
    loaded: LoadedRun, git_commit: str | None = None, git_branch: str | None = None
) -> tuple[dict[str, Any], list[RowValues]]:
    """The column values of one run, its rows and their passes."""
    record = loaded.record
    started = _parse_time(record.started) or datetime.now(timezone.utc)
    run = {
        "content_hash": loaded.content_hash,
        "run_dir": str(loaded.path.resolve()),
        "name": loaded.path.resolve().name,
        "status": record.status,
        "started": started,
        "finished": _parse_time(record.finished),
        "ingested": datetime.now(timezone.utc),
        "scenarios": ",".join(s.name for s in record.scenarios)
        or ",".join(dict.fromkeys(c.scenario for c in record.cases)),
        **run_environment(record, git_commit, git_branch),
        **ab_fields(record),
    }
    return run, [_row(case, mode, result) for case in record.cases for mode, result in case.modes.items()]


def ingest_loaded(
    db: HistoryDB, loaded: LoadedRun, git_commit: str | None = None, git_branch: str | None = None
) -> IngestOutcome:
    """Add a read run in one transaction (bulk inserts: the run, its rows, their passes); nothing when
    its content hash is there already, also when another process added it while this one was writing
    (the unique content hash refuses the second run: it is already in the history)."""
    run, rows = build_run(loaded, git_commit, git_branch)
    try:
        return _insert(db, loaded, run, rows)
    except DuplicateKey:
        with db.session() as session:
            existing = session.scalar(select(Run.id).where(Run.content_hash == loaded.content_hash))
        if existing is None:
            raise  # another constraint than the run's content hash
        return IngestOutcome(existing, loaded.content_hash, False, str(loaded.path))


def _insert(db: HistoryDB, loaded: LoadedRun, run: dict[str, Any], rows: list[RowValues]) -> IngestOutcome:
    with db.session() as session:
        existing = session.scalar(select(Run.id).where(Run.content_hash == loaded.content_hash))
        if existing is not None:
            return IngestOutcome(existing, loaded.content_hash, False, str(loaded.path))
        run_id = session.execute(insert(Run).values(**run).returning(Run.id)).scalar_one()
        row_ids: Sequence[int] = []
        if rows:
            row_ids = session.scalars(
                insert(RowResult).returning(RowResult.id, sort_by_parameter_order=True),
                [{"run_id": run_id, **r.row} for r in rows],
            ).all()
        passes = [{"row_id": row_id, **p} for row_id, r in zip(row_ids, rows) for p in r.passes]
        if passes:
            session.execute(insert(PassResult), passes)
        return IngestOutcome(run_id, loaded.content_hash, True, str(loaded.path))


def ingest_run_dir(
    db: str | HistoryDB | None,
    run_dir: str | Path,
    *,
    git_commit: str | None = None,
    git_branch: str | None = None,
) -> IngestOutcome:
    """Ingest one run directory into the database at ``db`` (a URL, None for the default, or an open
    HistoryDB). The run is read and checked before the database is opened, so a bad run directory
    leaves no database behind; the run goes in within one transaction. Idempotent."""
    loaded = read_run_dir(run_dir)
    if isinstance(db, HistoryDB):
        return ingest_loaded(db, loaded, git_commit, git_branch)
    with HistoryDB(db) as opened:
        return ingest_loaded(opened, loaded, git_commit, git_branch)
