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

import numpy as np
from sqlalchemy import select

from launchbench.history.db import HistoryDB, HistoryError
from launchbench.history.models import SERIES, PassResult, RowResult, Run
from launchbench.history.query import RunFilter, RunInfo, list_runs
from launchbench.results.schema import MEASURED_STATUSES, SAMPLE_KEYS, CaseResult, ModeResult, RunRecord

QUANTILES_PER_RUN = 25


def _thin(block: np.ndarray) -> np.ndarray:
    """A run's samples (series × n, its passes together) as QUANTILES_PER_RUN evenly spaced quantiles of
    each series: the run's median and spread, at a size that keeps compare's two-stage bootstrap fast
    (its cost grows with resamples × pooled samples). Runs with fewer samples are kept whole."""
    if block.shape[1] <= QUANTILES_PER_RUN:
        return block
    levels = (np.arange(QUANTILES_PER_RUN) + 0.5) / QUANTILES_PER_RUN
    return np.quantile(block, levels, axis=1).T


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
        order = {run_id: i for i, run_id in enumerate(ids)}
        rows = sorted(
            session.scalars(select(RowResult).where(RowResult.run_id.in_(ids))),
            key=lambda r: (order[r.run_id], r.id),
        )
        latest: dict[tuple[str, str, str], RowResult] = {}
        for row in rows:
            latest[(row.scenario, row.case_id, row.mode)] = row
        passes: dict[int, list[PassResult]] = {}
        for p in session.scalars(
            select(PassResult)
            .where(PassResult.row_id.in_([r.id for r in rows]))
            .order_by(PassResult.pass_index)
        ):
            passes.setdefault(p.row_id, []).append(p)
        cases: dict[tuple[str, str], dict[str, ModeResult]] = {}
        launches: dict[tuple[str, str], int] = {}
        for key, newest_row in latest.items():
            scenario, case_id, mode = key
            same = [
                r
                for r in rows
                if (r.scenario, r.case_id, r.mode) == key
                and r.launches_per_iter == newest_row.launches_per_iter
                and r.status in MEASURED_STATUSES
            ]
            blocks = [
                _thin(
                    np.concatenate(
                        [
                            np.frombuffer(p.samples, dtype="<f8").reshape(len(SERIES), p.n)
                            for p in passes[r.id]
                        ],
                        axis=1,
                    )
                )
                for r in same
                if passes.get(r.id)
            ]
            if blocks:
                pooled = np.concatenate(blocks, axis=1)
                samples = {
                    k: pooled[i][~np.isnan(pooled[i])].tolist()
                    for i, k in enumerate(SAMPLE_KEYS)
                    if not np.isnan(pooled[i]).any()
                }
                result = ModeResult.pooled(mode, "ok", samples, [b.shape[1] for b in blocks], target_met=True)  # type: ignore[arg-type]
            else:
                result = ModeResult(
                    mode=mode, status=newest_row.status, reason="not measured in any baseline run"
                )
            cases.setdefault((scenario, case_id), {})[mode] = result
            launches[(scenario, case_id)] = newest_row.launches_per_iter
    record = RunRecord(
        launchbench_version=str(newest.launchbench_version or "unknown"),
        status="complete",
        started=runs[0].started.isoformat(),
        finished=runs[-1].started.isoformat(),
        environment=environment,
        cases=[
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
        ],
    )
    return record, runs


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
