"""`history ingest` from parallel CI jobs: processes that ingest at once into one new database, SQLite and
PostgreSQL, 20 trials each: every one exits 0, the schema is made once, and each run is in the history
exactly once (a run another process just added is "already in the history")."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
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


@pytest.fixture(scope="module", autouse=True)
def imported(tmp_path_factory: pytest.TempPathFactory) -> None:
    """What an ingest imports on its way (the CLI, Alembic, the ORM, the driver), loaded once here."""
    with HistoryDB(f"sqlite:///{tmp_path_factory.mktemp('warm') / 'h.sqlite'}"):
        pass
    import psycopg  # noqa: F401
    import sqlalchemy.dialects.postgresql.psycopg  # noqa: F401
    import sqlalchemy.orm  # noqa: F401


def _ingest(url: str, run_dir: Path, start: FORK.Barrier, results: FORK.Queue) -> None:  # type: ignore[name-defined]
    start.wait(timeout=30)
    result = CliRunner().invoke(cli, ["history", "ingest", "--db", url, str(run_dir)])
    results.put((result.exit_code, result.output.strip()))


def _parallel(url: str, run_dirs: list[Path]) -> list[tuple[int, str]]:
    """Ingest each run directory in its own process, all released at once; their (exit code, output)."""
    start, results = FORK.Barrier(len(run_dirs)), FORK.Queue()
    procs = [FORK.Process(target=_ingest, args=(url, d, start, results)) for d in run_dirs]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    return outcomes


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


def test_parallel_ingest_adds_each_run_once(db_url: str, tmp_path: Path) -> None:
    """Each trial: a new database, three processes at once, two of them ingesting the same run and one
    another run (the schema made once, the same run added once, different runs both added)."""
    run_dirs = [RUN_A, RUN_A, RUN_B]
    for url in _trial_urls(db_url, tmp_path):
        outcomes = _parallel(url, run_dirs)
        assert [code for code, _ in outcomes] == [0, 0, 0], outcomes
        added = sorted(Path(out.split(":")[0]).name for _, out in outcomes if ": added (run" in out)
        assert added == [RUN_A.name, RUN_B.name], outcomes
        assert sum(f"{RUN_A}: already in the history (run " in out for _, out in outcomes) == 1, outcomes
        assert _runs(url) == [(RUN_A.name, 16), (RUN_B.name, 16)]
