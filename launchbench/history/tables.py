"""The history database's tables (SQLAlchemy Core), the schema every query reads.

A change here needs a migration in ``migrations/versions`` (Alembic); the database is brought to the
newest revision when it is opened, and a database of a revision this code does not know is refused
(tests/history keep the migrations equal to these tables). history.models maps ORM classes onto them
for the code that writes and rebuilds runs; the queries of changes and baselines use the tables alone
(Core), and the runs and trends (history.matching, history.trend) are plain SQL on the same names, so a
`history trend` process on a current SQLite file does not load SQLAlchemy at all.

Times are seconds per chain iteration, as in results.json; a metric's value is a column times
``Metric.scale(launches_per_iter)``.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from launchbench.history.columns import ENV_COLUMN_LABELS, ENV_COLUMNS, SERIES  # noqa: F401  (re-exported)

metadata = MetaData()

# One run directory, keyed by the sha256 of its results.json.
runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("content_hash", String(64), nullable=False, unique=True),
    Column("run_dir", Text, nullable=False),
    Column("name", String(255), nullable=False),
    Column("status", String(16), nullable=False),
    Column("started", DateTime(timezone=True), nullable=False, index=True),
    Column("finished", DateTime(timezone=True), nullable=True),
    Column("ingested", DateTime(timezone=True), nullable=False),
    Column("scenarios", Text, nullable=False),  # comma-separated scenario names
    Column("gpu_name", String(255), nullable=True, index=True),
    Column("gpu_uuid", String(64), nullable=True),
    Column("driver", String(64), nullable=True),
    Column("cuda_runtime", String(32), nullable=True),
    Column("cupy", String(32), nullable=True),
    Column("launchbench_version", String(32), nullable=True),
    Column("git_commit", String(64), nullable=True),
    Column("git_branch", String(255), nullable=True, index=True),
    Column("host", String(255), nullable=True),
    # a side of `launchbench ab`: the invocation's id (both sides share it) and the side, A or B
    Column("ab_id", String(64), nullable=True, index=True),
    Column("ab_side", String(16), nullable=True),
)

# One (scenario, case, mode) of a run: status and, per raw series, the pooled median with its CI
# (results.csv's numbers, in seconds per iteration).
row_results = Table(
    "row_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("scenario", String(255), nullable=False),
    Column("case_id", String(512), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("status", String(32), nullable=False),
    Column("launches_per_iter", Integer, nullable=False),
    Column("host_bound", Boolean, nullable=False),
    Column("passes", Integer, nullable=False),
    Column("n", Integer, nullable=False),
    *[
        Column(f"{s}_{part}", Float, nullable=True)
        for s in SERIES
        for part in ("median", "ci_low", "ci_high")
    ],
    UniqueConstraint("run_id", "scenario", "case_id", "mode"),
    Index("ix_row_results_row", "scenario", "case_id", "mode"),
)

# One pass of one row, as results.json holds it: the median of each raw series (what change points and
# trends use), the pass's raw samples (float64, series after series, ``n`` each; what a baseline drawn
# from history resamples), iterations per sample, throttled samples, whether the noise target was met,
# the graph life cycle, the SM clock readings (MHz, one after each sampling round, with their median)
# and throttle reasons, the host data (worker pid, 1-minute load average as the pass began) and, for a
# shape-changing case, what the pass did at its shape changes. Passes ingested into a database older
# than revision 0003 have these last columns empty.
pass_results = Table(
    "pass_results",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("row_id", Integer, ForeignKey("row_results.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("pass_index", Integer, nullable=False),
    Column("n", Integer, nullable=False),
    *[Column(f"{s}_median", Float, nullable=True) for s in SERIES],
    Column("samples", LargeBinary, nullable=False),
    Column("iters_per_sample", Integer, nullable=True),
    Column("throttled_samples", Integer, nullable=True),
    Column("target_met", Boolean, nullable=True),
    Column("lifecycle", JSON, nullable=True),  # GraphLifecycle's fields
    Column("sm_mhz", JSON, nullable=True),
    Column("sm_mhz_median", Float, nullable=True),
    Column("throttle_reasons", JSON, nullable=True),
    Column("host_pid", Integer, nullable=True),
    Column("host_load_1m", Float, nullable=True),
    Column("shapes", JSON, nullable=True),  # ShapeCounts' fields
    UniqueConstraint("row_id", "pass_index"),
)
