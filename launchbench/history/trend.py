"""One row's metric over runs (the trend), every row's at once (the report's), and whether the history
measured a row at all: plain SQL through any Reader, so ``history trend`` on a current SQLite file runs
without SQLAlchemy (history.reading)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from launchbench.history.columns import SERIES
from launchbench.history.errors import HistoryError
from launchbench.history.matching import ALL_RUNS, RunFilter, RunInfo, matching, oldest_first, run_query
from launchbench.history.reading import Param, Query, Reader
from launchbench.results.metrics import METRIC_BY_NAME, SAMPLE_KEYS

RowKey = tuple[str, str, str]  # (scenario, case, mode)


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


def median(values: Sequence[float]) -> float | None:
    """The median (statistics.median's: the middle value, or the mean of the two middle ones), None of
    no values; statistics is not loaded for it."""
    if not values:
        return None
    ordered = sorted(values)
    half = len(ordered) // 2
    return ordered[half] if len(ordered) % 2 else (ordered[half - 1] + ordered[half]) / 2


def trend(db: Reader, key: RowKey, metric: str, filters: RunFilter = ALL_RUNS) -> list[TrendPoint]:
    """One row's metric in each matching run that measured it, oldest first, with the SM clock and the
    host's load average its passes recorded."""
    return trends(db, metric, filters, key).get(key, [])


def _of_rows(filters: RunFilter, key: RowKey | None) -> tuple[str, dict[str, Param]]:
    """A subquery of the ids of the matching runs' rows (only ``key``'s when given), with its parameters."""
    runs = matching(filters, ("id",))
    sql = f"SELECT row_results.id FROM row_results WHERE row_results.run_id IN ({runs.sql})"
    params = dict(runs.params)
    if key is not None:
        sql += (
            " AND row_results.scenario = :row_scenario AND row_results.case_id = :row_case"
            " AND row_results.mode = :row_mode"
        )
        params.update(row_scenario=key[0], row_case=key[1], row_mode=key[2])
    return sql, params


def _trend_queries(series: str, filters: RunFilter, key: RowKey | None) -> tuple[Query, Query, Query]:
    """The matching runs; their rows (only ``key``'s when given) with the series' median and CI; and
    those rows' passes' SM clock medians and 1-minute load averages."""
    of_rows, params = _of_rows(filters, key)
    rows = Query(
        "SELECT row_results.id, row_results.run_id, row_results.scenario, row_results.case_id, "
        "row_results.mode, row_results.launches_per_iter, row_results.passes, row_results.n, "
        f"row_results.host_bound, row_results.{series}_median, row_results.{series}_ci_low, "
        f"row_results.{series}_ci_high FROM row_results WHERE row_results.id IN ({of_rows}) "
        "ORDER BY row_results.id",
        params,
    )
    passes = Query(
        "SELECT pass_results.row_id, pass_results.sm_mhz_median, pass_results.host_load_1m "
        f"FROM pass_results WHERE pass_results.row_id IN ({of_rows})",
        params,
    )
    return run_query(filters), rows, passes


def trends(
    db: Reader, metric: str, filters: RunFilter = ALL_RUNS, key: RowKey | None = None
) -> dict[RowKey, list[TrendPoint]]:
    """Every row's metric over the matching runs (only ``key``'s when given), read in three queries: per
    row, in first-seen order, its points oldest run first, with the SM clock and host load its passes
    recorded."""
    m = METRIC_BY_NAME[metric]
    run_rows, rows, pass_rows = db.read(*_trend_queries(series_of(metric), filters, key))
    matched = {run.id: run for run in oldest_first(run_rows)}
    clocks, loads = _pass_conditions(pass_rows)
    out: dict[RowKey, list[TrendPoint]] = {}
    for row_id, run_id, scenario, case, mode, launches, passes, n, host_bound, mid, low, high in rows:
        if mid is None:
            continue
        scale = m.scale(launches)
        out.setdefault((scenario, case, mode), []).append(
            TrendPoint(
                matched[run_id],
                mid * scale,
                low * scale if low is not None else math.nan,
                high * scale if high is not None else math.nan,
                passes,
                n,
                bool(host_bound),
                median(clocks.get(row_id, [])),
                median(loads.get(row_id, [])),
            )
        )
    order = {run_id: i for i, run_id in enumerate(matched)}
    return {k: sorted(points, key=lambda p: order[p.run.id]) for k, points in out.items()}


def _pass_conditions(
    rows: Sequence[Sequence[Any]],
) -> tuple[dict[int, list[float]], dict[int, list[float]]]:
    """Per row id, its passes' median SM clock readings and 1-minute load averages (where recorded)."""
    clocks: dict[int, list[float]] = {}
    loads: dict[int, list[float]] = {}
    for row_id, sm_mhz, load in rows:
        if sm_mhz is not None:
            clocks.setdefault(row_id, []).append(sm_mhz)
        if load is not None:
            loads.setdefault(row_id, []).append(load)
    return clocks, loads


def require_row(db: Reader, key: RowKey) -> None:
    """HistoryError unless some run in the history measured this row (scenario, case and mode), with
    the modes the history has of that case when it has some."""
    scenario, case, mode = key
    (found,) = db.read(
        Query(
            "SELECT row_results.mode FROM row_results "
            "WHERE row_results.scenario = :row_scenario AND row_results.case_id = :row_case",
            {"row_scenario": scenario, "row_case": case},
        )
    )
    modes = sorted({found_mode for (found_mode,) in found})
    if mode not in modes:
        has = f"; it has the modes {', '.join(modes)} of that case" if modes else ""
        raise HistoryError(
            f"{db.label}: no such row in the history (reading): {scenario}/{case} [{mode}]{has}"
        )
