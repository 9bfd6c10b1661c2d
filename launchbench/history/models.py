"""ORM classes on the history's tables (history.tables), for the code that writes runs and rebuilds them
from the database (ingest, the baseline drawn from history). Queries read the tables with SQLAlchemy
Core instead."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import DeclarativeBase, Mapped, relationship

from launchbench.history import tables
from launchbench.history.tables import ENV_COLUMN_LABELS, ENV_COLUMNS, SERIES  # noqa: F401  (re-exported)


class Base(DeclarativeBase):
    metadata = tables.metadata


class Run(Base):
    """One run directory, keyed by the sha256 of its results.json."""

    __table__ = tables.runs

    id: Mapped[int]
    content_hash: Mapped[str]
    run_dir: Mapped[str]
    name: Mapped[str]
    status: Mapped[str]
    started: Mapped[datetime]
    finished: Mapped[datetime | None]
    ingested: Mapped[datetime]
    scenarios: Mapped[str]
    gpu_name: Mapped[str | None]
    gpu_uuid: Mapped[str | None]
    driver: Mapped[str | None]
    cuda_runtime: Mapped[str | None]
    cupy: Mapped[str | None]
    launchbench_version: Mapped[str | None]
    git_commit: Mapped[str | None]
    git_branch: Mapped[str | None]
    host: Mapped[str | None]
    ab_id: Mapped[str | None]
    ab_side: Mapped[str | None]

    rows: Mapped[list[RowResult]] = relationship(back_populates="run", cascade="all, delete-orphan")

    def env(self) -> dict[str, str | None]:
        return {column: getattr(self, column) for column in ENV_COLUMNS}


class SeriesMedians:
    """The median of each raw series, in seconds per iteration (None where it was not measured): what
    trends, change points and baselines read as ``{series}_median``."""

    wall_median: Mapped[float | None]
    cpu_median: Mapped[float | None]
    gpu_median: Mapped[float | None]
    latency_median: Mapped[float | None]


class RowResult(SeriesMedians, Base):
    """One (scenario, case, mode) of a run (tables.row_results)."""

    __table__ = tables.row_results

    id: Mapped[int]
    run_id: Mapped[int]
    scenario: Mapped[str]
    case_id: Mapped[str]
    mode: Mapped[str]
    status: Mapped[str]
    launches_per_iter: Mapped[int]
    host_bound: Mapped[bool]
    passes: Mapped[int]
    n: Mapped[int]
    wall_ci_low: Mapped[float | None]
    wall_ci_high: Mapped[float | None]
    cpu_ci_low: Mapped[float | None]
    cpu_ci_high: Mapped[float | None]
    gpu_ci_low: Mapped[float | None]
    gpu_ci_high: Mapped[float | None]
    latency_ci_low: Mapped[float | None]
    latency_ci_high: Mapped[float | None]

    run: Mapped[Run] = relationship(back_populates="rows")
    passes_: Mapped[list[PassResult]] = relationship(
        back_populates="row", cascade="all, delete-orphan", order_by="PassResult.pass_index"
    )


class PassResult(SeriesMedians, Base):
    """One pass of one row (tables.pass_results)."""

    __table__ = tables.pass_results

    id: Mapped[int]
    row_id: Mapped[int]
    pass_index: Mapped[int]
    n: Mapped[int]
    samples: Mapped[bytes]
    iters_per_sample: Mapped[int | None]
    throttled_samples: Mapped[int | None]
    target_met: Mapped[bool | None]
    lifecycle: Mapped[dict[str, Any] | None]
    sm_mhz: Mapped[list[float] | None]
    sm_mhz_median: Mapped[float | None]
    throttle_reasons: Mapped[list[str] | None]
    host_pid: Mapped[int | None]
    host_load_1m: Mapped[float | None]
    shapes: Mapped[dict[str, Any] | None]

    row: Mapped[RowResult] = relationship(back_populates="passes_")
