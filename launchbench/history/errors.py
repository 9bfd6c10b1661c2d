"""The history's errors, and the one line a database error becomes (no SQLAlchemy here: the SQLite
reader and the SQLAlchemy engine word their errors alike)."""

from __future__ import annotations

from launchbench.errors import LaunchbenchError


class HistoryError(LaunchbenchError):
    """The history database cannot be opened, read or written."""


class DuplicateKey(HistoryError):
    """A write broke a unique constraint (e.g. a run another process added meanwhile)."""


def first_line(message: str, fallback: str) -> str:
    """The first line of a driver's error message (``fallback`` when it has none)."""
    lines = message.strip().splitlines()
    return lines[0] if lines else fallback


def database_error(first: str, where: str, lock_timeout: float, *, server: bool) -> HistoryError:
    """One line for a database error (``first``: the driver's message) on the database ``where``;
    ``server``: the error is a server's that could not be reached (an operational error, not SQLite)."""
    if "database is locked" in first:
        return HistoryError(
            f"{where}: the database is locked by another process (tried for {lock_timeout:g} s); try again"
        )
    if server:
        return HistoryError(f"{where}: the database server does not answer ({first})")
    return HistoryError(f"{where}: {first}")
