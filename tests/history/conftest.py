"""History tests run over both databases: SQLite (a file per test) and PostgreSQL (a fresh database per
test on the server named by $LAUNCHBENCH_TEST_POSTGRES_URL, a URL whose user may create databases).
Outside CI a missing URL skips the PostgreSQL half with a reason; in CI ($CI=true) it is a failure."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PG_ENV = "LAUNCHBENCH_TEST_POSTGRES_URL"


def _postgres_url() -> Iterator[str]:
    admin_url = os.environ.get(PG_ENV)
    if not admin_url:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                f"CI=true but ${PG_ENV} is not set: the history tests must run against PostgreSQL in CI"
            )
        pytest.skip(
            f"no PostgreSQL server: set ${PG_ENV} (e.g. postgresql+psycopg://USER:PW@127.0.0.1/postgres)"
        )
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"lbtest_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty history database of each kind."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.sqlite'}"
    else:
        yield from _postgres_url()


@pytest.fixture(scope="session")
def stepped(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """12 runs from the committed H200 passes: graph rows +8% and the driver 580.159.04 → 590.10.01 from run 7,
    host drift on host-bound rows (tests/history/synth.py)."""
    from synth import STEPPED, series

    return series(tmp_path_factory.mktemp("stepped"), STEPPED)


@pytest.fixture(scope="session")
def series_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Any], list[Path]]:
    """tests/history/synth.py's ``series`` of a SeriesSpec, written once a session: a test over both
    databases reads the same runs for each (ingest only reads a run directory)."""
    from synth import series

    written: dict[str, list[Path]] = {}

    def of(spec: Any) -> list[Path]:
        key = repr(spec)  # a SeriesSpec holds a dict: not hashable, its repr is its value
        if key not in written:
            written[key] = series(tmp_path_factory.mktemp("series"), spec)
        return written[key]

    return of
