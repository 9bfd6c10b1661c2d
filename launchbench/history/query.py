"""Reading the history: runs (filtered), one row's metric over runs, and per-pass medians by row.

Filters match the environment columns exactly (GPU name and UUID, driver, CuPy, CUDA runtime,
launchbench version, branch, commit, host) and an `ab` invocation's id and side, the scenario by name; ``last`` keeps the newest N runs. Runs come oldest first.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Connection, Select, select

from launchbench.history.db import HistoryDB, HistoryError
from launchbench.history.tables import ENV_COLUMNS, SERIES, pass_results, row_results, runs
from launchbench.results.metrics import METRIC_BY_NAME, SAMPLE_KEYS

RowKey = tuple[str, str, str]  # (scenario, case, mode)
# the runs columns a filter matches exactly
COLUMN_FILTERS = (
    "gpu_name",
    "gpu_uuid",
    "driver",
    "cupy",
    "cuda_runtime",
    "launchbench_version",
    "git_branch",
    "git_commit",
    "host",
    "ab_id",
    "ab_side",
)


@dataclass(frozen=True)
class RunFilter:
    """Which runs to use; None means any. ``last``: the newest N of those that match."""

    gpu_name: str | None = None
    gpu_uuid: str | None = None
    driver: str | None = None
    cupy: str | None = None
    cuda_runtime: str | None = None
    launchbench_version: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    host: str | None = None
    ab_id: str | None = None
    ab_side: str | None = None
    scenario: str | None = None
    last: int | None = None
    exclude_hash: str | None = None

    def apply(self, query: Select[Any]) -> Select[Any]:
        for column in COLUMN_FILTERS:
            value = getattr(self, column)
            if value is not None:
                query = query.where(getattr(runs.c, column) == value)
        if self.scenario is not None:
            query = query.where(
                runs.c.id.in_(select(row_results.c.run_id).where(row_results.c.scenario == self.scenario))
            )
        if self.exclude_hash is not None:
            query = query.where(runs.c.content_hash != self.exclude_hash)
        return query

    def describe(self) -> str:
        parts = [
            f"{f.name}={getattr(self, f.name)}"
            for f in fields(self)
            if f.name != "exclude_hash" and getattr(self, f.name) is not None
        ]
        return ", ".join(parts) or "all runs"


ALL_RUNS = RunFilter()


@dataclass(frozen=True)
class RunInfo:
    id: int
    name: str
    run_dir: str
    status: str
    started: datetime
    scenarios: str
    env: dict[str, str | None]
    ab_id: str | None = None  # a side of `launchbench ab`: the invocation's id and the side (A or B)
    ab_side: str | None = None


@dataclass(frozen=True)
class TrendPoint:
    """One run's value of one row's metric: the pooled median and its CI (results.csv's), in the
    metric's unit."""

    run: RunInfo
    median: float
    ci_low: float
    ci_high: float
    passes: int
    n: int
    host_bound: bool
    sm_mhz: float | None = None  # median over the row's passes of each pass's median SM clock reading
    load_1m: float | None = None  # median over the row's passes of the host's 1-minute load average


RUN_COLUMNS = (
    runs.c.id,
    runs.c.name,
    runs.c.run_dir,
    runs.c.status,
    runs.c.started,
    runs.c.scenarios,
    *[getattr(runs.c, column) for column in ENV_COLUMNS],
    runs.c.ab_id,
    runs.c.ab_side,
)  # what a RunInfo holds


def _info(run: Any) -> RunInfo:
    """A RunInfo from a row of RUN_COLUMNS (or an ORM Run)."""
    started = (
        run.started if run.started.tzinfo else run.started.replace(tzinfo=timezone.utc)
    )  # SQLite drops the zone
    env = {column: getattr(run, column) for column in ENV_COLUMNS}
    return RunInfo(
        run.id, run.name, run.run_dir, run.status, started, run.scenarios, env, run.ab_id, run.ab_side
    )


def _matching(filters: RunFilter, *columns: Any) -> Select[Any]:
    """A query of ``columns`` of the matching runs, newest first (the newest N with ``last``)."""
    query = filters.apply(select(*columns)).order_by(runs.c.started.desc(), runs.c.id.desc())
    return query.limit(filters.last) if filters.last is not None else query


def _runs(connection: Connection, filters: RunFilter) -> list[Any]:
    """The matching runs as rows of RUN_COLUMNS, oldest first."""
    return list(reversed(connection.execute(_matching(filters, *RUN_COLUMNS)).all()))


def list_runs(db: HistoryDB, filters: RunFilter = ALL_RUNS) -> list[RunInfo]:
    with db.connect() as connection:
        return [_info(run) for run in _runs(connection, filters)]


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


def series_of(metric: str) -> str:
    try:
        return SERIES[SAMPLE_KEYS.index(METRIC_BY_NAME[metric].sample_key)]
    except KeyError:
        raise HistoryError(f"unknown metric {metric!r}; metrics: {', '.join(METRIC_BY_NAME)}") from None


def parse_row(text: str, mode: str) -> RowKey:
    """``SCENARIO/CASE`` (the case id may hold slashes) and a mode → a row key."""
    scenario, sep, case = text.partition("/")
    if not sep or not case:
        raise HistoryError(f"row {text!r}: give SCENARIO/CASE, e.g. quickstart/empty/length=10")
    return (scenario, case, mode)


def _median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def trend(db: HistoryDB, key: RowKey, metric: str, filters: RunFilter = ALL_RUNS) -> list[TrendPoint]:
    """One row's metric in each matching run that measured it, oldest first, with the SM clock and the
    host's load average its passes recorded."""
    return trends(db, metric, filters, key).get(key, [])


def trends(
    db: HistoryDB, metric: str, filters: RunFilter = ALL_RUNS, key: RowKey | None = None
) -> dict[RowKey, list[TrendPoint]]:
    """Every row's metric over the matching runs (only ``key``'s when given), read in two queries: per row,
    in first-seen order, its points oldest run first, with the SM clock and host load its passes recorded."""
    series = series_of(metric)
    m = METRIC_BY_NAME[metric]
    with db.connect() as connection:
        matched = {run.id: _info(run) for run in _runs(connection, filters)}
        of_rows = select(row_results.c.id).where(row_results.c.run_id.in_(_matching(filters, runs.c.id)))
        if key is not None:
            of_rows = of_rows.where(
                row_results.c.scenario == key[0],
                row_results.c.case_id == key[1],
                row_results.c.mode == key[2],
            )
        rows = connection.execute(
            select(
                row_results.c.id,
                row_results.c.run_id,
                row_results.c.scenario,
                row_results.c.case_id,
                row_results.c.mode,
                row_results.c.launches_per_iter,
                row_results.c.passes,
                row_results.c.n,
                row_results.c.host_bound,
                getattr(row_results.c, f"{series}_median").label("median"),
                getattr(row_results.c, f"{series}_ci_low").label("ci_low"),
                getattr(row_results.c, f"{series}_ci_high").label("ci_high"),
            )
            .where(row_results.c.id.in_(of_rows))
            .order_by(row_results.c.id)
        ).all()
        clocks, loads = _pass_conditions(connection, of_rows)
    out: dict[RowKey, list[TrendPoint]] = {}
    for row in rows:
        if row.median is None:
            continue
        scale = m.scale(row.launches_per_iter)
        out.setdefault((row.scenario, row.case_id, row.mode), []).append(
            TrendPoint(
                matched[row.run_id],
                row.median * scale,
                row.ci_low * scale if row.ci_low is not None else math.nan,
                row.ci_high * scale if row.ci_high is not None else math.nan,
                row.passes,
                row.n,
                row.host_bound,
                _median(clocks.get(row.id, [])),
                _median(loads.get(row.id, [])),
            )
        )
    order = {run_id: i for i, run_id in enumerate(matched)}
    return {k: sorted(points, key=lambda p: order[p.run.id]) for k, points in out.items()}


def _pass_conditions(
    connection: Connection, of_rows: Select[Any]
) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Per row id, its passes' median SM clock readings and 1-minute load averages (where recorded)."""
    clocks: dict[int, list[float]] = {}
    loads: dict[int, list[float]] = {}
    query = select(pass_results.c.row_id, pass_results.c.sm_mhz_median, pass_results.c.host_load_1m).where(
        pass_results.c.row_id.in_(of_rows)
    )
    for row_id, sm_mhz, load in connection.execute(query):
        if sm_mhz is not None:
            clocks.setdefault(row_id, []).append(sm_mhz)
        if load is not None:
            loads.setdefault(row_id, []).append(load)
    return clocks, loads


def require_row(db: HistoryDB, key: RowKey) -> None:
    """HistoryError unless some run in the history measured this row (scenario, case and mode), with
    the modes the history has of that case when it has some."""
    scenario, case, mode = key
    with db.connect() as connection:
        modes = sorted(
            set(
                connection.execute(
                    select(row_results.c.mode).where(
                        row_results.c.scenario == scenario, row_results.c.case_id == case
                    )
                ).scalars()
            )
        )
    if mode not in modes:
        has = f"; it has the modes {', '.join(modes)} of that case" if modes else ""
        raise HistoryError(
            f"{db.label}: no such row in the history (reading): {scenario}/{case} [{mode}]{has}"
        )


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
            _median(clocks.get(run_id, [])), _median(loads.get(run_id, [])), throttled.get(run_id, 0)
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
        matched = {run.id: _info(run) for run in _runs(connection, filters)}
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
