"""What a query of the history is (plain SQL text with ``:name`` parameters, the same on SQLite and
PostgreSQL) and what runs it: a Reader. HistoryDB (SQLAlchemy, any database, migrating it) is one; a
current SQLite file read with the standard library's driver (history.sqlite_file) is the other, so a
read-only command on it does not load SQLAlchemy."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

Param = str | int | None


@dataclass(frozen=True)
class Query:
    """One SELECT: its SQL (table-qualified columns, ``:name`` parameters) and the parameters' values."""

    sql: str
    params: Mapping[str, Param] = field(default_factory=dict)


class Reader(Protocol):
    """An open history database that runs queries."""

    @property
    def label(self) -> str: ...  # the database, for messages (a password hidden)

    def read(self, *queries: Query) -> list[Sequence[Sequence[Any]]]:
        """Each query's rows (tuples of its columns, in order), the queries run one after another."""
        ...

    def close(self) -> None: ...


@contextmanager
def open_reader(db: str | None, reading: str) -> Iterator[Reader]:
    """The history database at ``db`` for a command that only reads it: a SQLite file at the newest
    schema revision through the standard library's driver, any other database (or a file to upgrade)
    through HistoryDB. A missing SQLite file is refused, not made (``reading`` says what was read)."""
    from launchbench.history.location import LOCK_TIMEOUT_S, resolve_url
    from launchbench.history.sqlite_file import open_current

    reader: Reader | None = open_current(resolve_url(db), LOCK_TIMEOUT_S)
    if reader is None:
        from launchbench.history.db import open_existing

        reader = open_existing(db, reading)
    try:
        yield reader
    finally:
        reader.close()
