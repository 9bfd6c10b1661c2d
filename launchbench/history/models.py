"""The history database's tables (SQLAlchemy 2 declarative models).

A change here needs a migration in ``migrations/versions`` (Alembic); the database is brought to the
newest revision when it is opened, and a database of a revision this code does not know is refused.

Times are seconds per chain iteration, as in results.json; a metric's value is a column times
``Metric.scale(launches_per_iter)``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


# the environment columns, in the order a change is described ("driver 580 → 590")
ENV_COLUMNS: tuple[str, ...] = (
    "gpu_name",
    "gpu_uuid",
    "driver",
    "cuda_runtime",
    "cupy",
    "launchbench_version",
    "git_commit",
    "git_branch",
    "host",
)
ENV_COLUMN_LABELS: dict[str, str] = {
    "gpu_name": "GPU",
    "gpu_uuid": "GPU UUID",
    "driver": "driver",
    "cuda_runtime": "CUDA runtime",
    "cupy": "CuPy",
    "launchbench_version": "launchbench",
    "git_commit": "commit",
    "git_branch": "branch",
    "host": "host",
}
SERIES: tuple[str, ...] = (
    "wall",
    "cpu",
    "gpu",
    "latency",
)  # the raw series, in results.json's SAMPLE_KEYS order


class Run(Base):
    """One run directory, keyed by the sha256 of its results.json."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    content_hash: Mapped[str] = mapped_column(String(64), unique=True)
    run_dir: Mapped[str] = mapped_column(Text)
    name: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(String(16))
    started: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    finished: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    ingested: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    scenarios: Mapped[str] = mapped_column(Text)  # comma-separated scenario names
    gpu_name: Mapped[str | None] = mapped_column(String(255), nullable=True, index=True)
    gpu_uuid: Mapped[str | None] = mapped_column(String(64), nullable=True)
    driver: Mapped[str | None] = mapped_column(String(64), nullable=True)
    cuda_runtime: Mapped[str | None] = mapped_column(String(32), nullable=True)
    cupy: Mapped[str | None] = mapped_column(String(32), nullable=True)
    launchbench_version: Mapped[str | None] = mapped_column(String(32), nullable=True)
    git_commit: Mapped[str | None] = mapped_column(String(64), nullable=True)
    git_branch: Mapped[str | None] = mapped_column(String(255), nullable=True, index=True)
    host: Mapped[str | None] = mapped_column(String(255), nullable=True)
    # a side of `launchbench ab`: the invocation's id (both sides share it) and the side, A or B
    ab_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    ab_side: Mapped[str | None] = mapped_column(String(16), nullable=True)

    rows: Mapped[list[RowResult]] = relationship(back_populates="run", cascade="all, delete-orphan")

    def env(self) -> dict[str, str | None]:
        return {column: getattr(self, column) for column in ENV_COLUMNS}


class SeriesMedians:
    """The median of each raw series, in seconds per iteration (None where it was not measured): what
    trends, change points and baselines read as ``{series}_median``."""

    wall_median: Mapped[float | None] = mapped_column(Float, nullable=True)
    cpu_median: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu_median: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_median: Mapped[float | None] = mapped_column(Float, nullable=True)


class RowResult(SeriesMedians, Base):
    """One (scenario, case, mode) of a run: status and, per raw series, the pooled median with its CI
    (results.csv's numbers, in seconds per iteration)."""

    __tablename__ = "row_results"
    __table_args__ = (
        UniqueConstraint("run_id", "scenario", "case_id", "mode"),
        Index("ix_row_results_row", "scenario", "case_id", "mode"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    scenario: Mapped[str] = mapped_column(String(255))
    case_id: Mapped[str] = mapped_column(String(512))
    mode: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(32))
    launches_per_iter: Mapped[int] = mapped_column(Integer)
    host_bound: Mapped[bool] = mapped_column(Boolean)
    passes: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    wall_ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    wall_ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    cpu_ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    cpu_ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu_ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    gpu_ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_ci_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    latency_ci_high: Mapped[float | None] = mapped_column(Float, nullable=True)

    run: Mapped[Run] = relationship(back_populates="rows")
    passes_: Mapped[list[PassResult]] = relationship(
        back_populates="row", cascade="all, delete-orphan", order_by="PassResult.pass_index"
    )


class PassResult(SeriesMedians, Base):
    """One pass of one row, as results.json holds it: the median of each raw series (what change points
    and trends use), the pass's raw samples (float64, series after series, ``n`` each; what a baseline
    drawn from history resamples), iterations per sample, throttled samples, whether the noise target
    was met, the graph life cycle, the SM clock readings (MHz, one after each sampling round, with their
    median) and throttle reasons, the host data (worker pid, 1-minute load average as the pass began)
    and, for a shape-changing case, what the pass did at its shape changes. Passes ingested into a
    database older than revision 0003 have these last columns empty."""

    __tablename__ = "pass_results"
    __table_args__ = (UniqueConstraint("row_id", "pass_index"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    row_id: Mapped[int] = mapped_column(ForeignKey("row_results.id", ondelete="CASCADE"), index=True)
    pass_index: Mapped[int] = mapped_column(Integer)
    n: Mapped[int] = mapped_column(Integer)
    samples: Mapped[bytes] = mapped_column(LargeBinary)
    iters_per_sample: Mapped[int | None] = mapped_column(Integer, nullable=True)
    throttled_samples: Mapped[int | None] = mapped_column(Integer, nullable=True)
    target_met: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    lifecycle: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # GraphLifecycle's fields
    sm_mhz: Mapped[list[float] | None] = mapped_column(JSON, nullable=True)
    sm_mhz_median: Mapped[float | None] = mapped_column(Float, nullable=True)
    throttle_reasons: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    host_pid: Mapped[int | None] = mapped_column(Integer, nullable=True)
    host_load_1m: Mapped[float | None] = mapped_column(Float, nullable=True)
    shapes: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)  # ShapeCounts' fields

    row: Mapped[RowResult] = relationship(back_populates="passes_")
