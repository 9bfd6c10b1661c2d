"""Which runs a query uses: the filter (environment columns matched exactly, an `ab` invocation's id and
side, a scenario by name, the newest N) as SQL, and the runs it matches as RunInfo. Plain SQL text, the
same on SQLite and PostgreSQL (no SQLAlchemy here: history.reading says why)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Any

from launchbench.history.columns import ENV_COLUMNS
from launchbench.history.reading import Param, Query, Reader

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
RUN_FIELDS = ("id", "name", "run_dir", "status", "started", "scenarios", *ENV_COLUMNS, "ab_id", "ab_side")


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

    def where(self) -> tuple[str, dict[str, Param]]:
        """The filter as a WHERE clause on ``runs`` ('' when it matches every run) and its parameters."""
        clauses = []
        params: dict[str, Param] = {}
        for column in COLUMN_FILTERS:
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"runs.{column} = :{column}")
                params[column] = value
        if self.scenario is not None:
            clauses.append(
                "runs.id IN (SELECT row_results.run_id FROM row_results WHERE row_results.scenario = :scenario)"
            )
            params["scenario"] = self.scenario
        if self.exclude_hash is not None:
            clauses.append("runs.content_hash != :exclude_hash")
            params["exclude_hash"] = self.exclude_hash
        return (f" WHERE {' AND '.join(clauses)}" if clauses else ""), params

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


def matching(filters: RunFilter, columns: Sequence[str]) -> Query:
    """The ``runs`` columns of the matching runs, newest first (the newest N with ``last``)."""
    where, params = filters.where()
    listed = ", ".join(f"runs.{c}" for c in columns)
    sql = f"SELECT {listed} FROM runs{where} ORDER BY runs.started DESC, runs.id DESC"
    if filters.last is not None:
        sql += " LIMIT :last"
        params["last"] = filters.last
    return Query(sql, params)


def run_query(filters: RunFilter) -> Query:
    """The matching runs as rows of RUN_FIELDS (run_info reads them), newest first."""
    return matching(filters, RUN_FIELDS)


def _started(value: datetime | str) -> datetime:
    """A run's start: SQLite keeps the text SQLAlchemy wrote (ISO, the zone dropped: UTC), PostgreSQL a
    datetime with its zone."""
    started = value if isinstance(value, datetime) else datetime.fromisoformat(value)
    return started if started.tzinfo else started.replace(tzinfo=timezone.utc)


def run_info(row: Sequence[Any]) -> RunInfo:
    """A RunInfo from a row of RUN_FIELDS."""
    id_, name, run_dir, status, started, scenarios, *rest = row
    env = dict(zip(ENV_COLUMNS, rest))
    ab_id, ab_side = rest[len(ENV_COLUMNS) :]
    return RunInfo(id_, name, run_dir, status, _started(started), scenarios, env, ab_id, ab_side)


def oldest_first(rows: Sequence[Sequence[Any]]) -> list[RunInfo]:
    """The rows of run_query (newest first) as RunInfo, oldest first."""
    return [run_info(row) for row in reversed(rows)]


def list_runs(db: Reader, filters: RunFilter = ALL_RUNS) -> list[RunInfo]:
    """The matching runs, oldest first."""
    (rows,) = db.read(run_query(filters))
    return oldest_first(rows)
