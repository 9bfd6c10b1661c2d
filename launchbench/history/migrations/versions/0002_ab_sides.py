"""runs.ab_id, runs.ab_side: which `launchbench ab` invocation and side a run is

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("ab_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("ab_side", sa.String(16), nullable=True))
        batch.create_index("ix_runs_ab_id", ["ab_id"])


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_index("ix_runs_ab_id")
        batch.drop_column("ab_side")
        batch.drop_column("ab_id")
