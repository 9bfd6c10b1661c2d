"""What the history report's page holds, as one model the page embeds as JSON and its script draws from:
the runs (environment, start time, link, what their passes recorded of the GPU and host), every row's
points (run, median, 95% CI), the change points, and the rows grouped by scenario (rows measured in two
runs or more are charts, rows measured in one run a table).

Points and change points refer to runs by their index in ``runs``; floats keep 5 significant digits.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from launchbench.history.changes import ChangePoint, detect_changes
from launchbench.history.db import HistoryDB
from launchbench.history.matching import ALL_RUNS, RunFilter, RunInfo, list_runs
from launchbench.history.query import RunConditions, run_conditions
from launchbench.history.tables import ENV_COLUMN_LABELS
from launchbench.history.trend import RowKey, TrendPoint, trends
from launchbench.results.metrics import METRIC_BY_NAME

# the environment columns the page filters on, and those its runs table shows
FILTER_COLUMNS = ("gpu_name", "driver", "cupy", "cuda_runtime", "launchbench_version", "git_branch", "host")
RUN_COLUMNS = (*FILTER_COLUMNS, "git_commit")
DIGITS = 5


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class PageRun(_Frozen):
    id: int
    name: str
    href: str  # the run directory, relative to the page
    started: str  # ISO 8601
    t: float  # start, seconds since the epoch (the charts' time axis)
    env: dict[str, str]  # RUN_COLUMNS → value ("—" when unknown)
    sm_mhz: float | None
    load_1m: float | None
    throttled: int


class PageRow(_Frozen):
    scenario: str
    case: str
    mode: str
    points: list[tuple[int, float, float | None, float | None]]  # run index, median, CI low, CI high


class PageChange(_Frozen):
    row: int  # index in rows
    before: int  # run indices: the last run before the step, the first after it
    after: int
    step: float  # relative, with its 95% CI
    low: float
    high: float
    p: float
    explanation: str


class PageScenario(_Frozen):
    name: str
    charts: list[int]  # row indices: rows with two points or more
    singles: list[int]  # rows with one point


class PageFilter(_Frozen):
    column: str
    label: str
    values: list[str]


class PageData(_Frozen):
    db: str
    metric: str
    metric_doc: str
    unit: str
    runs: list[PageRun]
    rows: list[PageRow]
    changes: list[PageChange]
    scenarios: list[PageScenario]
    filters: list[PageFilter]


def _round(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{DIGITS}g}")


def _shown(value: object) -> str:
    """An environment value as the page shows it (and filters on it): a dash when unknown."""
    return "—" if value is None else str(value)


def _rel(path: str, out_dir: Path) -> str:
    try:
        return Path(os.path.relpath(path, out_dir.resolve())).as_posix()
    except ValueError:  # another drive
        return Path(path).as_uri()


def _run(run: RunInfo, out_dir: Path, conditions: RunConditions | None) -> PageRun:
    return PageRun(
        id=run.id,
        name=run.name,
        href=_rel(run.run_dir, out_dir),
        started=run.started.isoformat(),
        t=run.started.timestamp(),
        env={c: _shown(run.env[c]) for c in RUN_COLUMNS},
        sm_mhz=_round(conditions.sm_mhz) if conditions else None,
        load_1m=_round(conditions.load_1m) if conditions else None,
        throttled=conditions.throttled_samples if conditions else 0,
    )


def _row(key: RowKey, points: list[TrendPoint], index: dict[int, int]) -> PageRow:
    return PageRow(
        scenario=key[0],
        case=key[1],
        mode=key[2],
        points=[
            (index[p.run.id], _round(p.median) or 0.0, _round(p.ci_low), _round(p.ci_high)) for p in points
        ],
    )


def _change(change: ChangePoint, rows: dict[RowKey, int], index: dict[int, int]) -> PageChange:
    return PageChange(
        row=rows[(change.scenario, change.case, change.mode)],
        before=index[change.before.id],
        after=index[change.after.id],
        step=_round(change.step) or 0.0,
        low=_round(change.step_ci_low) or 0.0,
        high=_round(change.step_ci_high) or 0.0,
        p=_round(change.p_value) or 0.0,
        explanation=change.explanation,
    )


def _scenarios(rows: list[PageRow]) -> list[PageScenario]:
    names = list(dict.fromkeys(r.scenario for r in rows))
    return [
        PageScenario(
            name=name,
            charts=[i for i, r in enumerate(rows) if r.scenario == name and len(r.points) > 1],
            singles=[i for i, r in enumerate(rows) if r.scenario == name and len(r.points) == 1],
        )
        for name in names
    ]


def build_page(
    db: HistoryDB, out_dir: Path, metric: str = "wall_us_per_launch", filters: RunFilter = ALL_RUNS
) -> PageData:
    """The page's data for the matching runs; links are relative to ``out_dir``."""
    runs = list_runs(db, filters)
    index = {run.id: i for i, run in enumerate(runs)}
    conditions = run_conditions(db, [r.id for r in runs])
    by_row = trends(db, metric, filters)
    keys = list(by_row)  # first-seen order
    rows = [_row(key, by_row[key], index) for key in keys]
    row_index = {key: i for i, key in enumerate(keys)}
    found = detect_changes(db, filters, (metric,))
    page_runs = [_run(r, out_dir, conditions.get(r.id)) for r in runs]
    return PageData(
        db=db.label,
        metric=metric,
        metric_doc=METRIC_BY_NAME[metric].doc,
        unit="µs",
        runs=page_runs,
        rows=rows,
        changes=[_change(c, row_index, index) for c in found],
        scenarios=_scenarios(rows),
        filters=[
            PageFilter(
                column=c,
                label=ENV_COLUMN_LABELS[c],
                values=sorted({r.env[c] for r in page_runs}),
            )
            for c in FILTER_COLUMNS
        ],
    )
