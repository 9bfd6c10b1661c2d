"""Reading the history: runs (filtered), one row's metric over runs, and per-pass medians by row.

Filters match the environment columns exactly (GPU name and UUID, driver, CuPy, CUDA runtime,
launchbench version, branch, commit, host) and an `ab` invocation's id and side, the scenario by name; ``last`` keeps the newest N runs. Runs come oldest first.
The filter, the runs and the trend are plain SQL (history.matching, history.trend: any Reader runs them,
so ``history trend`` need not load SQLAlchemy); the rest here are SQLAlchemy Core queries on HistoryDB.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select, text

from launchbench.history.db import HistoryDB
from launchbench.history.matching import ALL_RUNS, RunFilter, RunInfo, oldest_first, run_query
from launchbench.history.tables import SERIES, pass_results, row_results
from launchbench.history.trend import RowKey, median, series_of
from launchbench.results.metrics import METRIC_BY_NAME


def _runs(connection: Connection, filters: RunFilter) -> list[RunInfo]:
    """The matching runs, oldest first."""
    query = run_query(filters)
    return oldest_first(connection.execute(text(query.sql), dict(query.params)).all())


def row_keys(db: HistoryDB, filters: RunFilter = ALL_RUNS) -> list[RowKey]:
    """Every (scenario, case, mode) measured in the matching runs, in first-seen order."""
    with db.connect() as connection:
        ids = [run.id for run in _runs(connection, filters)]
        query = (
            select(row_results.c.scenario, row_results.c.case_id, row_results.c.mode)
            .where(row_results.c.run_id.in_(ids))
            .order_by(row_results.c.id)
        )
        return list(dict.fromkeys((s, c, m) for s, c, m in connection.execute(query)))


@dataclass(frozen=True)
class RunConditions:
    """What a run's passes recorded of the GPU and host, over all its rows: medians of the passes' median
    SM clock and 1-minute load average (None where not recorded), and the throttled samples in all."""

    sm_mhz: float | None
    load_1m: float | None
    throttled_samples: int


def run_conditions(db: HistoryDB, run_ids: Sequence[int]) -> dict[int, RunConditions]:
    """Per run id, the conditions its passes recorded."""
    clocks: dict[int, list[float]] = {}
    loads: dict[int, list[float]] = {}
    throttled: dict[int, int] = {}
    query = (
        select(
            row_results.c.run_id,
            pass_results.c.sm_mhz_median,
            pass_results.c.host_load_1m,
            pass_results.c.throttled_samples,
        )
        .join(pass_results, pass_results.c.row_id == row_results.c.id)
        .where(row_results.c.run_id.in_(list(run_ids)))
    )
    with db.connect() as connection:
        for run_id, sm_mhz, load, throttled_samples in connection.execute(query):
            if sm_mhz is not None:
                clocks.setdefault(run_id, []).append(sm_mhz)
            if load is not None:
                loads.setdefault(run_id, []).append(load)
            throttled[run_id] = throttled.get(run_id, 0) + (throttled_samples or 0)
    return {
        run_id: RunConditions(
            median(clocks.get(run_id, [])), median(loads.get(run_id, [])), throttled.get(run_id, 0)
        )
        for run_id in run_ids
    }


@dataclass(frozen=True)
class RowSeries:
    """One row's per-pass medians over runs (raw series, seconds per iteration), oldest run first."""

    key: RowKey
    runs: tuple[RunInfo, ...]
    launches: tuple[int, ...]
    host_bound: tuple[bool, ...]
    pass_medians: tuple[dict[str, tuple[float, ...]], ...]  # per run: series name → pass medians

    def metric_passes(self, metric: str) -> list[list[float]]:
        """Per run, the pass medians of a metric in its unit (runs without the series give [])."""
        m = METRIC_BY_NAME[metric]
        name = series_of(metric)
        return [
            [v * m.scale(lpi) for v in medians.get(name, ())]
            for lpi, medians in zip(self.launches, self.pass_medians)
        ]


def pass_series(
    db: HistoryDB, filters: RunFilter = ALL_RUNS, keys: Sequence[RowKey] | None = None
) -> list[RowSeries]:
    """Per row, the per-pass medians of every matching run that measured it."""
    with db.connect() as connection:
        matched = {run.id: run for run in _runs(connection, filters)}
        order = {run_id: i for i, run_id in enumerate(matched)}
        query = (
            select(
                row_results.c.id,
                row_results.c.run_id,
                row_results.c.scenario,
                row_results.c.case_id,
                row_results.c.mode,
                row_results.c.launches_per_iter,
                row_results.c.host_bound,
                pass_results.c.pass_index,
                *[getattr(pass_results.c, f"{s}_median") for s in SERIES],
            )
            .join(pass_results, pass_results.c.row_id == row_results.c.id)
            .where(row_results.c.run_id.in_(list(matched)))
            .order_by(row_results.c.id, pass_results.c.pass_index)
        )
        wanted = set(keys) if keys is not None else None
        by_row: dict[RowKey, dict[int, tuple[int, bool, dict[str, list[float]]]]] = {}
        # rows by position: (row id, run id, scenario, case, mode, launches, host bound, pass, *medians)
        for _, run_id, scenario, case_id, mode, launches, host_bound, _, *values in connection.execute(query):
            key = (scenario, case_id, mode)
            if wanted is not None and key not in wanted:
                continue
            per_run = by_row.setdefault(key, {})
            _, _, medians = per_run.setdefault(run_id, (launches, host_bound, {}))
            for s, value in zip(SERIES, values):
                if value is not None:
                    medians.setdefault(s, []).append(float(value))
    out = []
    for key, per_run in by_row.items():
        ids = sorted(per_run, key=lambda i: order[i])
        out.append(
            RowSeries(
                key,
                tuple(matched[i] for i in ids),
                tuple(per_run[i][0] for i in ids),
                tuple(per_run[i][1] for i in ids),
                tuple({s: tuple(v) for s, v in per_run[i][2].items()} for i in ids),
            )
        )
    return out
