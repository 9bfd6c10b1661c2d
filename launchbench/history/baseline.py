"""A baseline drawn from history: the last N matching runs as one run whose every row holds each of
those runs as one pass, for ``compare`` to compare a run against (the run compared enters as one pass
too: ``as_one_run``).

The run is the unit: passes of one run share the host's speed state, runs are what vary independently.
compare's t test over passes then sets the current run, one draw of the host's state, against the
spread between the baseline's runs (shrunk, as compare does, toward rows of its kind); so a row's
verdict says whether the current run lies outside what the last N runs spread over, not outside one
run's luck. Each baseline run enters as 25 evenly spaced quantiles of its samples (its median and
spread, at a small size). Rows are taken only from runs with the same launches per iteration as the
newest of them.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from launchbench.history import DEFAULT_LAST
from launchbench.history.db import HistoryDB, HistoryError, open_existing
from launchbench.history.matching import RunFilter, RunInfo, list_runs
from launchbench.history.models import SERIES, PassResult, RowResult, Run
from launchbench.results.schema import MEASURED_STATUSES, SAMPLE_KEYS, CaseResult, ModeResult, RunRecord

QUANTILES_PER_RUN = 25


class SameAs(enum.Enum):
    """Whether a baseline's runs must share an environment field with the current run."""

    ANY = "any"
    CURRENT = "current"


def _thin(block: np.ndarray) -> np.ndarray:
    """A run's samples (series × n, its passes together) as QUANTILES_PER_RUN evenly spaced quantiles of
    each series: the run's median and spread, at a size that keeps compare's two-stage bootstrap fast
    (its cost grows with resamples × pooled samples). Runs with fewer samples are kept whole."""
    if block.shape[1] <= QUANTILES_PER_RUN:
        return block
    levels = (np.arange(QUANTILES_PER_RUN) + 0.5) / QUANTILES_PER_RUN
    return np.quantile(block, levels, axis=1).T


Key = tuple[str, str, str]  # (scenario, case, mode)


@dataclass(frozen=True)
class BaselineQuery:
    """Which history runs a baseline is drawn from, beside the current run's GPU model: the database
    (None: the default), the current run's driver or CuPy only, a branch, the newest N."""

    db: str | None = None
    driver: SameAs = SameAs.ANY
    cupy: SameAs = SameAs.ANY
    git_branch: str | None = None
    last: int = DEFAULT_LAST


def _pooled(mode: str, newest: RowResult, blocks: list[np.ndarray]) -> ModeResult:
    """One baseline row: the runs' thinned blocks pooled, each run one pass."""
    if not blocks:
        return ModeResult(mode=mode, status=newest.status, reason="not measured in any baseline run")
    pooled = np.concatenate(blocks, axis=1)
    samples = {
        k: pooled[i][~np.isnan(pooled[i])].tolist()
        for i, k in enumerate(SAMPLE_KEYS)
        if not np.isnan(pooled[i]).any()
    }
    return ModeResult.pooled(mode, "ok", samples, [b.shape[1] for b in blocks], target_met=True)  # type: ignore[arg-type]


def _block(passes: list[PassResult]) -> np.ndarray:
    """A row's passes' samples side by side (series × n), thinned."""
    arrays = [np.frombuffer(p.samples, dtype="<f8").reshape(len(SERIES), p.n) for p in passes]
    return _thin(np.concatenate(arrays, axis=1))


def _cases(session: Session, ids: list[int]) -> list[CaseResult]:
    """Per row key (first-seen order), the matching runs' rows pooled: one pass per run, only the rows
    with the newest row's launches per iteration; one pass over the rows and one over the passes."""
    order = {run_id: i for i, run_id in enumerate(ids)}
    rows = sorted(
        session.scalars(select(RowResult).where(RowResult.run_id.in_(ids))),
        key=lambda r: (order[r.run_id], r.id),
    )
    by_key: dict[Key, list[RowResult]] = {}
    for row in rows:
        by_key.setdefault((row.scenario, row.case_id, row.mode), []).append(row)
    passes: dict[int, list[PassResult]] = {}
    query = select(PassResult).where(PassResult.row_id.in_([r.id for r in rows]))
    for p in session.scalars(query.order_by(PassResult.pass_index)):
        passes.setdefault(p.row_id, []).append(p)
    cases: dict[tuple[str, str], dict[str, ModeResult]] = {}
    launches: dict[tuple[str, str], int] = {}
    for (scenario, case_id, mode), same_key in by_key.items():
        newest = same_key[-1]
        blocks = [
            _block(passes[r.id])
            for r in same_key
            if r.launches_per_iter == newest.launches_per_iter
            and r.status in MEASURED_STATUSES
            and passes.get(r.id)
        ]
        cases.setdefault((scenario, case_id), {})[mode] = _pooled(mode, newest, blocks)
        launches[(scenario, case_id)] = newest.launches_per_iter
    return [
        CaseResult(
            scenario=s,
            case_id=c,
            chain="",
            kinds="",
            launches_per_iter=launches[(s, c)],
            modes=modes,
            passes_done=max((len(m.pass_sizes) for m in modes.values()), default=1),
        )
        for (s, c), modes in cases.items()
    ]


def history_baseline(db: HistoryDB, filters: RunFilter) -> tuple[RunRecord, list[RunInfo]]:
    """The matching runs pooled into one RunRecord (passes kept apart), and those runs."""
    runs = list_runs(db, filters)
    if not runs:
        raise HistoryError(
            f"no run in {db.label} matches the baseline filters ({filters.describe()}); ingest runs first"
        )
    ids = [r.id for r in runs]
    with db.session() as session:
        newest = session.get(Run, ids[-1])
        assert newest is not None
        environment = {
            "gpu": {"name": newest.gpu_name, "uuid": newest.gpu_uuid},
            "driver": newest.driver,
            "cuda_runtime": newest.cuda_runtime,
            "cupy": newest.cupy,
            "git_commit": newest.git_commit,
            "launchbench": newest.launchbench_version,
        }
        cases = _cases(session, ids)
    record = RunRecord(
        launchbench_version=str(newest.launchbench_version or "unknown"),
        status="complete",
        started=runs[0].started.isoformat(),
        finished=runs[-1].started.isoformat(),
        environment=environment,
        cases=cases,
    )
    return record, runs


@dataclass(frozen=True)
class HistoryBaseline:
    """``compare --baseline history``: the baseline drawn from history, its label, and the current run
    as one unit (its passes pooled: as_one_run)."""

    baseline: RunRecord
    label: str
    current: RunRecord


def history_baseline_for(current: str, query: BaselineQuery) -> HistoryBaseline:
    """The baseline drawn from history for the run at ``current``: the newest matching runs on its GPU
    model, the current run's own results.json left out; a missing SQLite file is refused, not made."""
    from launchbench.history.ingest import run_environment
    from launchbench.results.store import load_run, read_capped, resolve_results_file

    record = load_run(current)
    env = run_environment(record)
    file = resolve_results_file(current)  # a run replayed from its journal alone is not in the history
    digest = hashlib.sha256(read_capped(file)).hexdigest() if file.is_file() else None
    filters = RunFilter(
        gpu_name=env["gpu_name"],
        driver=env["driver"] if query.driver is SameAs.CURRENT else None,
        cupy=env["cupy"] if query.cupy is SameAs.CURRENT else None,
        git_branch=query.git_branch,
        last=query.last,
        exclude_hash=digest,
    )
    with open_existing(query.db, "the baseline") as opened:
        baseline, runs = history_baseline(opened, filters)
    label = f"history ({len(runs)} runs: {runs[0].name} … {runs[-1].name}; {filters.describe()})"
    return HistoryBaseline(baseline, label, as_one_run(record))


def as_one_run(record: RunRecord) -> RunRecord:
    """The run compared against a history baseline: each row's passes pooled into one, so that the run
    is one unit against the baseline's runs. Its passes shared one host state, so their spread says
    nothing of how far a whole run lands from the others; the baseline's spread between runs does."""
    cases = []
    for case in record.cases:
        modes = {
            mode: ModeResult.pooled(
                result.mode,
                result.status,
                result.samples,
                None,
                result.iters_per_sample,
                target_met=result.target_met,
                lifecycle=result.lifecycle,
                reason=result.reason,
            )
            if len(result.passes) > 1
            else result
            for mode, result in case.modes.items()
        }
        cases.append(case.model_copy(update={"modes": modes}))
    return record.model_copy(update={"cases": cases})
