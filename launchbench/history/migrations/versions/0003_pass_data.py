"""pass_results: the rest of a pass (iterations per sample, throttled samples, target met, graph life
cycle, SM clock readings and throttle reasons, host pid and load average, shape-change counts)

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = (
    ("iters_per_sample", sa.Integer),
    ("throttled_samples", sa.Integer),
    ("target_met", sa.Boolean),
    ("lifecycle", sa.JSON),
    ("sm_mhz", sa.JSON),
    ("sm_mhz_median", sa.Float),
    ("throttle_reasons", sa.JSON),
    ("host_pid", sa.Integer),
    ("host_load_1m", sa.Float),
    ("shapes", sa.JSON),
)


def upgrade() -> None:
    with op.batch_alter_table("pass_results") as batch:
        for name, kind in COLUMNS:
            batch.add_column(sa.Column(name, kind(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("pass_results") as batch:
        for name, _ in reversed(COLUMNS):
            batch.drop_column(name)
