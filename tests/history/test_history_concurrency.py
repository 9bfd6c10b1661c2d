"""`history ingest` from parallel CI jobs: processes that ingest at once into one new database, SQLite and
PostgreSQL, 20 trials each: every one exits 0, the schema is made once, and each run is in the history
exactly once (a run another process just added is "already in the history")."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

import launchbench.history.ingest  # noqa: F401  (imported here, so the children forked below start with it)
from launchbench.cli import cli
from launchbench.history.db import HistoryDB

REPO = Path(__file__).resolve().parents[2]
RUN_A = REPO / "results" / "quickstart-h200"
RUN_B = REPO / "results" / "quickstart-h200-b"
TRIALS = 20
FORK = multiprocessing.get_context("fork")  # children start with launchbench imported: the race is the ingest


PROCESSES = 3


def _warm(tmp: Path) -> None:
    """What an ingest loads on its way (the CLI, Alembic and its scripts, the ORM, the drivers), loaded
    once in this process, so the processes forked from it race on the ingest, not on imports."""
    with HistoryDB(f"sqlite:///{tmp / 'warm.sqlite'}"):
        pass
    import sqlalchemy.orm  # noqa: F401

    try:
        import psycopg  # noqa: F401
        import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401
    except ImportError:
        pass


def _ingester(tasks: FORK.Queue, start: FORK.Barrier, results: FORK.Queue) -> None:  # type: ignore[name-defined]
    """A process that, for each (url, run directory) it is given, waits for the others, then ingests."""
    while (task := tasks.get()) is not None:
        url, run_dir = task
        start.wait(timeout=60)
        result = CliRunner().invoke(cli, ["history", "ingest", "--db", url, run_dir])
        results.put((result.exit_code, result.output.strip()))


@pytest.fixture(scope="module")
def ingest_at_once(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str, list[Path]], list[tuple[int, str]]]]:
    """Ingest run directories into a database, each in its own process (PROCESSES of them, forked once
    and kept for every trial), all released at once: their (exit code, output)."""
    _warm(tmp_path_factory.mktemp("warm"))
    start, results = FORK.Barrier(PROCESSES), FORK.Queue()
    queues = [FORK.Queue() for _ in range(PROCESSES)]
    procs = [FORK.Process(target=_ingester, args=(q, start, results), daemon=True) for q in queues]
    for proc in procs:
        proc.start()

    def ingest(url: str, run_dirs: list[Path]) -> list[tuple[int, str]]:
        assert len(run_dirs) == PROCESSES
        for queue, run_dir in zip(queues, run_dirs):
            queue.put((url, str(run_dir)))
        return [results.get(timeout=60) for _ in run_dirs]

    yield ingest
    for queue in queues:
        queue.put(None)
    for proc in procs:
        proc.join(timeout=30)


def _trial_urls(db_url: str, tmp_path: Path) -> Iterator[str]:
    """A new, empty database for each trial: a new SQLite file, or the PostgreSQL database emptied."""
    for trial in range(TRIALS):
        if db_url.startswith("sqlite"):
            yield f"sqlite:///{tmp_path / f'trial-{trial}.sqlite'}"
            continue
        engine = create_engine(db_url)
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
        engine.dispose()
        yield db_url


def _runs(url: str) -> list[tuple[str, int]]:
    """(run directory, rows) of every run in the history."""
    engine = create_engine(make_url(url))
    with engine.connect() as connection:
        runs = connection.execute(
            text(
                "SELECT runs.run_dir, count(row_results.id) FROM runs "
                "LEFT JOIN row_results ON row_results.run_id = runs.id GROUP BY runs.id, runs.run_dir"
            )
        ).all()
    engine.dispose()
    return sorted((str(Path(r).name), n) for r, n in runs)


def test_parallel_ingest_adds_each_run_once(
    db_url: str, tmp_path: Path, ingest_at_once: Callable[[str, list[Path]], list[tuple[int, str]]]
) -> None:
    """Each trial: a new database, three processes at once, two of them ingesting the same run and one
    another run (the schema made once, the same run added once, different runs both added)."""
    run_dirs = [RUN_A, RUN_A, RUN_B]
    for url in _trial_urls(db_url, tmp_path):
        outcomes = ingest_at_once(url, run_dirs)
        assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
        added = sorted(Path(out.split(":")[0]).name for _, out in outcomes if ": added (run" in out)
        assert added == [RUN_A.name, RUN_B.name], outcomes
        assert sum(f"{RUN_A}: already in the history (run " in out for _, out in outcomes) == 1, outcomes
        assert _runs(url) == [(RUN_A.name, 16), (RUN_B.name, 16)]
