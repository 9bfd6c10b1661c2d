"""A SQLite history file at the newest schema revision, read with the standard library's sqlite3 (a
Reader): a read-only command such as ``history trend`` then loads neither SQLAlchemy nor Alembic. Any
other file (no schema yet, an older or newer revision, not a database) is left to HistoryDB, which
migrates or refuses it as it always has."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from launchbench.history.errors import database_error, first_line
from launchbench.history.location import plain_sqlite_file
from launchbench.history.migrations import HEAD
from launchbench.history.reading import Query

REVISION_SQL = "SELECT version_num FROM alembic_version"


class SqliteFile:
    """An open SQLite history file of the newest revision; each query runs as SQLAlchemy's SQLite driver
    runs a SELECT (no transaction of its own), waiting up to ``lock_timeout`` for a writer's lock."""

    def __init__(self, connection: sqlite3.Connection, url: str, lock_timeout: float):
        self._connection = connection
        self.url = url
        self.lock_timeout = lock_timeout

    @property
    def label(self) -> str:
        return self.url  # a plain sqlite:/// URL holds no password

    def read(self, *queries: Query) -> list[Sequence[Sequence[Any]]]:
        try:
            return [self._connection.execute(q.sql, dict(q.params)).fetchall() for q in queries]
        except sqlite3.Error as err:
            message = first_line(str(err), type(err).__name__)
            raise database_error(message, self.label, self.lock_timeout, server=False) from None

    def close(self) -> None:
        self._connection.close()


def open_current(url: str, lock_timeout: float) -> SqliteFile | None:
    """The SQLite file a plain ``sqlite:///PATH`` URL names when it exists and is at the newest revision
    (one query tells); None for any other URL or file (HistoryDB's to open). A file locked by a writer for
    longer than ``lock_timeout`` is a HistoryError, worded as HistoryDB words it."""
    path = plain_sqlite_file(url)
    if path is None or not path.is_file():
        return None
    try:
        connection = sqlite3.connect(path, timeout=lock_timeout)
    except sqlite3.Error:
        return None
    try:
        revision = connection.execute(REVISION_SQL).fetchall()
    except sqlite3.Error as err:  # no version table yet, not a database: HistoryDB's to migrate or refuse
        connection.close()
        message = first_line(str(err), type(err).__name__)
        if "database is locked" in message:  # as HistoryDB would say it, having waited as long
            raise database_error(message, url, lock_timeout, server=False) from None
        return None
    if revision != [(HEAD,)]:
        connection.close()
        return None
    return SqliteFile(connection, url, lock_timeout)
