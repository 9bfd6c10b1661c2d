"""Which history database: the URL from ``--db``, else $LAUNCHBENCH_HISTORY_DB, else a SQLite file under
``results/``; and the file a plain SQLite URL names (no SQLAlchemy here)."""

from __future__ import annotations

import os
from pathlib import Path

from launchbench.history import ENV_VAR

DEFAULT_PATH = Path("results") / "history.sqlite"
LOCK_TIMEOUT_S = 5.0  # how long a SQLite writer waits for another process's lock before giving up
PLAIN_SQLITE = "sqlite:///"


def resolve_url(db: str | None = None) -> str:
    """``--db``, else $LAUNCHBENCH_HISTORY_DB, else the default SQLite file. A plain path is a SQLite file."""
    url = db or os.environ.get(ENV_VAR) or str(DEFAULT_PATH)
    if "://" not in url:
        url = f"sqlite:///{url}"
    return url


def plain_sqlite_file(url: str) -> Path | None:
    """The file of a plain SQLite URL (``sqlite:///PATH``, no driver, query string or escapes: SQLAlchemy
    reads such a URL as that path), None for any other URL."""
    if not url.startswith(PLAIN_SQLITE):
        return None
    path = url[len(PLAIN_SQLITE) :]
    if not path or path == ":memory:" or any(c in path for c in "?#%"):
        return None
    return Path(path)
