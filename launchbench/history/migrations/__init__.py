"""The history database's Alembic migrations (versions/), run by launchbench.history.db."""

# The newest revision in versions/. Opening a database at this revision needs no Alembic at all (one
# query reads the revision); any other revision goes through Alembic, which upgrades it or refuses it.
# tests/history/test_history_store.py keeps it equal to Alembic's head.
HEAD = "0003"
