"""Reading the history through plain SQL: a current SQLite file with the standard library's driver (no
SQLAlchemy, no Alembic), any other database or file through HistoryDB, which migrates or refuses it."""

from __future__ import annotations

import random
import sqlite3
import statistics
from pathlib import Path

import pytest
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from launchbench.history.db import HistoryDB, HistoryError
from launchbench.history.ingest import ingest_run_dir
from launchbench.history.location import plain_sqlite_file
from launchbench.history.matching import RunFilter, list_runs
from launchbench.history.migrations import HEAD
from launchbench.history.reading import open_reader
from launchbench.history.sqlite_file import SqliteFile, open_current
from launchbench.history.trend import median, trend, trends

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "results" / "quickstart-h200"
KEY = ("quickstart", "scale/length=100", "graph")
FILTERS = (
    RunFilter(),
    RunFilter(last=5),
    RunFilter(driver="590.10.01", last=3),
    RunFilter(gpu_name="NVIDIA H200", scenario="quickstart"),
    RunFilter(scenario="no-such-scenario"),
    RunFilter(host="no-such-host"),
)


def _revision(path: Path) -> list[tuple[str]]:
    with sqlite3.connect(path) as connection:
        return connection.execute("SELECT version_num FROM alembic_version").fetchall()


def test_a_current_sqlite_file_reads_as_historydb_does(tmp_path: Path, stepped: list[Path]) -> None:
    """At the newest revision the file is read with sqlite3, and every filter gives the runs and trends
    HistoryDB (SQLAlchemy) gives."""
    path = tmp_path / "h.sqlite"
    for run in stepped:
        ingest_run_dir(str(path), run)
    with open_reader(str(path), "a trend") as fast, HistoryDB(str(path)) as db:
        assert isinstance(fast, SqliteFile) and fast.label == db.label
        for filters in FILTERS:
            assert list_runs(fast, filters) == list_runs(db, filters)
            assert trends(fast, "wall_us_per_launch", filters) == trends(db, "wall_us_per_launch", filters)
            assert trend(fast, KEY, "cpu_us_per_launch", filters) == trend(
                db, KEY, "cpu_us_per_launch", filters
            )
        assert len(trend(fast, KEY, "wall_us_per_launch")) == len(stepped)


def test_an_old_or_empty_file_is_upgraded_through_historydb(tmp_path: Path) -> None:
    """A file of an older revision (or none, an empty file) is opened by HistoryDB, which migrates it
    as before; the next open finds it current and reads it with sqlite3."""
    from alembic import command
    from alembic.config import Config

    from launchbench.history.db import MIGRATIONS

    old = tmp_path / "old.sqlite"
    engine = create_engine(f"sqlite:///{old}")
    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    engine.dispose()
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    for path in (old, empty):
        assert open_current(f"sqlite:///{path}", 1.0) is None
        with open_reader(str(path), "the runs") as reader:
            assert isinstance(reader, HistoryDB) and list_runs(reader) == []
        assert _revision(path) == [(HEAD,)]
        with open_reader(str(path), "the runs") as reader:
            assert isinstance(reader, SqliteFile)


def test_a_newer_or_foreign_file_is_refused_as_before(tmp_path: Path) -> None:
    newer = tmp_path / "newer.sqlite"
    ingest_run_dir(str(newer), QUICKSTART)
    with sqlite3.connect(newer) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    with (
        pytest.raises(HistoryError, match="schema revision '9999', newer than this launchbench knows"),
        open_reader(str(newer), "a trend"),
    ):
        pass
    foreign = tmp_path / "foreign.sqlite"
    foreign.write_text("not a database\n" * 100)
    with pytest.raises(HistoryError) as direct:
        HistoryDB(str(foreign))
    with pytest.raises(HistoryError) as read, open_reader(str(foreign), "a trend"):
        pass
    assert str(read.value) == str(direct.value)


def test_a_locked_file_is_one_line_after_the_lock_timeout(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    ingest_run_dir(str(path), QUICKSTART)
    url = f"sqlite:///{path}"
    reader = open_current(url, 0.1)
    assert reader is not None
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        for read in (lambda: open_current(url, 0.1), lambda: trend(reader, KEY, "wall_us_per_launch")):
            with pytest.raises(
                HistoryError, match=r"locked by another process \(tried for 0.1 s\); try again"
            ):
                read()
    finally:
        holder.rollback()
        holder.close()
        reader.close()


@pytest.mark.parametrize(
    "url",
    ["sqlite:///h.sqlite", "sqlite:////tmp/a b/h.sqlite", "sqlite:///results/h@x.sqlite", "sqlite:///./h"],
)
def test_a_plain_sqlite_url_names_the_file_sqlalchemy_opens(url: str) -> None:
    assert str(plain_sqlite_file(url)) == str(Path(make_url(url).database or ""))


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///h.sqlite?mode=ro",
        "sqlite:///h%20x.sqlite",
        "sqlite+pysqlite:///h.sqlite",
        "postgresql+psycopg://u@host/db",
    ],
)
def test_any_other_url_is_left_to_historydb(url: str) -> None:
    assert plain_sqlite_file(url) is None and open_current(url, 0.1) is None


def test_median_is_the_statistics_median() -> None:
    rng = random.Random(7)
    for n in range(1, 40):
        values = [rng.uniform(0, 3000) for _ in range(n)]
        assert median(values) == statistics.median(values)
        assert median([int(v) for v in values]) == statistics.median([int(v) for v in values])
    assert median([]) is None
