"""Alembic environment: run by launchbench.history.db with an open connection (never from a config file)."""

from __future__ import annotations

from alembic import context

from launchbench.history.tables import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
