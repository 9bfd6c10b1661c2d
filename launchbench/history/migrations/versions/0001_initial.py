"""runs, row_results, pass_results

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("content_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("run_dir", sa.Text(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ingested", sa.DateTime(timezone=True), nullable=False),
        sa.Column("scenarios", sa.Text(), nullable=False),
        sa.Column("gpu_name", sa.String(255), nullable=True),
        sa.Column("gpu_uuid", sa.String(64), nullable=True),
        sa.Column("driver", sa.String(64), nullable=True),
        sa.Column("cuda_runtime", sa.String(32), nullable=True),
        sa.Column("cupy", sa.String(32), nullable=True),
        sa.Column("launchbench_version", sa.String(32), nullable=True),
        sa.Column("git_commit", sa.String(64), nullable=True),
        sa.Column("git_branch", sa.String(255), nullable=True),
        sa.Column("host", sa.String(255), nullable=True),
    )
    op.create_index("ix_runs_started", "runs", ["started"])
    op.create_index("ix_runs_gpu_name", "runs", ["gpu_name"])
    op.create_index("ix_runs_git_branch", "runs", ["git_branch"])
    series = ("wall", "cpu", "gpu", "latency")
    op.create_table(
        "row_results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("scenario", sa.String(255), nullable=False),
        sa.Column("case_id", sa.String(512), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("launches_per_iter", sa.Integer(), nullable=False),
        sa.Column("host_bound", sa.Boolean(), nullable=False),
        sa.Column("passes", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        *[
            sa.Column(f"{s}_{part}", sa.Float(), nullable=True)
            for s in series
            for part in ("median", "ci_low", "ci_high")
        ],
        sa.UniqueConstraint("run_id", "scenario", "case_id", "mode"),
    )
    op.create_index("ix_row_results_run_id", "row_results", ["run_id"])
    op.create_index("ix_row_results_row", "row_results", ["scenario", "case_id", "mode"])
    op.create_table(
        "pass_results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column(
            "row_id", sa.Integer(), sa.ForeignKey("row_results.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("pass_index", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        *[sa.Column(f"{s}_median", sa.Float(), nullable=True) for s in series],
        sa.Column("samples", sa.LargeBinary(), nullable=False),
        sa.UniqueConstraint("row_id", "pass_index"),
    )
    op.create_index("ix_pass_results_row_id", "pass_results", ["row_id"])


def downgrade() -> None:
    op.drop_table("pass_results")
    op.drop_table("row_results")
    op.drop_table("runs")
