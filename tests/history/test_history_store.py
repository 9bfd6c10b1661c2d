"""The history store: migrations, idempotent ingest, per-pass rows, environment columns, bad input."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.orm import selectinload

from launchbench.errors import LaunchbenchError, ResultsFileError
from launchbench.history.db import HistoryDB, HistoryError
from launchbench.history.ingest import ingest_run_dir
from launchbench.history.location import resolve_url
from launchbench.history.models import PassResult, RowResult, Run
from launchbench.results.store import load_run

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "results" / "quickstart-h200"
V2 = REPO / "results" / "quickstart-h200-v2"
SHAPES = REPO / "results" / "shape-changes-h200"


def _counts(url: str) -> tuple[int, int, int]:
    with HistoryDB(url) as db, db.session() as s:
        return tuple(s.scalar(select(func.count()).select_from(t)) for t in (Run, RowResult, PassResult))  # type: ignore[return-value]


def test_ingest_stores_rows_passes_and_environment(db_url: str) -> None:
    outcome = ingest_run_dir(db_url, QUICKSTART, git_branch="main")
    assert outcome.created
    record = load_run(QUICKSTART)
    rows = sum(len(c.modes) for c in record.cases)
    passes = sum(len(m.pass_sizes) for c in record.cases for m in c.modes.values())
    assert _counts(db_url) == (1, rows, passes)
    with HistoryDB(db_url) as db, db.session() as s:
        run = s.scalars(select(Run)).one()
        assert (run.gpu_name, run.driver, run.cuda_runtime, run.cupy) == (
            "NVIDIA H200",
            "580.159.04",
            "13.2",
            "14.2.0",
        )
        assert run.gpu_uuid == record.environment.gpu.uuid and run.git_branch == "main"
        assert run.git_commit == record.environment.git_commit and run.host == "vm"
        row = s.scalars(
            select(RowResult).where(RowResult.case_id == "scale/length=100", RowResult.mode == "graph")
        ).one()
        case = record.case("quickstart", "scale/length=100")
        assert case is not None
        wall = case.samples("graph", "wall_s_per_iter")
        assert row.wall_median == pytest.approx(float(np.median(wall)))
        first = row.passes_[0]
        sizes = case.modes["graph"].pass_sizes
        assert first.n == sizes[0]
        assert first.wall_median == pytest.approx(float(np.median(wall[: sizes[0]])))
        block = np.frombuffer(first.samples, dtype="<f8").reshape(4, first.n)
        assert np.array_equal(block[0], wall[: sizes[0]])


def test_ingest_stores_every_pass_with_its_v2_data(db_url: str) -> None:
    """A schema-v2 run (the committed H200 quickstart): every pass of every row goes in with its samples
    and medians, iterations per sample, throttled samples, target met, graph life cycle, SM clock
    readings and host data; the trend shows each run's clock and load."""
    from launchbench.history.trend import trend

    record = load_run(V2)
    ingest_run_dir(db_url, V2)
    with HistoryDB(db_url) as db, db.session() as s:
        stored = {
            (row.case_id, row.mode): row
            for row in s.scalars(select(RowResult).options(selectinload(RowResult.passes_)))
        }
        checked = 0
        for case in record.cases:
            for mode, result in case.modes.items():
                row = stored[(case.case_id, mode)]
                assert [p.pass_index for p in row.passes_] == list(range(len(result.passes)))
                assert row.n == sum(p.size for p in result.passes)
                for got, one in zip(row.passes_, result.passes):
                    block = np.frombuffer(got.samples, dtype="<f8").reshape(4, got.n)
                    assert np.array_equal(block[0], one.samples["wall_s_per_iter"])
                    assert got.wall_median == pytest.approx(float(np.median(one.samples["wall_s_per_iter"])))
                    assert (got.iters_per_sample, got.throttled_samples, got.target_met) == (
                        one.iters_per_sample,
                        one.throttled_samples,
                        one.target_met,
                    )
                    assert got.sm_mhz == one.clocks.sm_mhz and len(got.sm_mhz) > 0
                    assert got.sm_mhz_median == pytest.approx(float(np.median(one.clocks.sm_mhz)))
                    assert (got.host_pid, got.host_load_1m) == (one.host.pid, one.host.load_1m)
                    assert got.throttle_reasons == (one.clocks.throttle_reasons or None)
                    expected = one.lifecycle.model_dump() if one.lifecycle is not None else None
                    assert got.lifecycle == expected
                    checked += 1
        assert checked == sum(len(m.passes) for c in record.cases for m in c.modes.values())
        assert any(p.lifecycle is not None for row in stored.values() for p in row.passes_)
        assert len({p.iters_per_sample for row in stored.values() for p in row.passes_}) > 1
        points = trend(db, ("quickstart", "scale/length=100", "graph"), "wall_us_per_launch")
    case = record.case("quickstart", "scale/length=100")
    assert case is not None
    loads = [p.host.load_1m for p in case.modes["graph"].passes]
    assert len(points) == 1 and points[0].load_1m == pytest.approx(float(np.median(loads)))
    assert points[0].sm_mhz == pytest.approx(
        float(np.median([np.median(p.clocks.sm_mhz) for p in case.modes["graph"].passes]))
    )


def test_ingest_stores_each_passes_shape_counts(db_url: str) -> None:
    """A shape-changing run (the committed H200 one): its recapture, cache and update rows go in, each pass
    with what it did at its shape changes."""
    record = load_run(SHAPES)
    ingest_run_dir(db_url, SHAPES)
    expected = {
        (case.case_id, mode, index): one.shapes.model_dump()
        for case in record.cases
        for mode, result in case.modes.items()
        for index, one in enumerate(result.passes)
        if one.shapes is not None and one.size > 0
    }
    assert {mode for _, mode, _ in expected} >= {"recapture", "cache", "update"}
    with HistoryDB(db_url) as db, db.session() as s:
        stored = {
            (case_id, mode, index): shapes
            for case_id, mode, index, shapes in s.execute(
                select(RowResult.case_id, RowResult.mode, PassResult.pass_index, PassResult.shapes).join(
                    PassResult, PassResult.row_id == RowResult.id
                )
            )
            if shapes is not None
        }
    assert stored == expected


def test_ingest_is_idempotent_by_content(db_url: str, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(QUICKSTART, copy)
    first = ingest_run_dir(db_url, QUICKSTART)
    again = ingest_run_dir(db_url, QUICKSTART)
    moved = ingest_run_dir(db_url, copy)
    assert first.created and not again.created and not moved.created
    assert again.run_id == first.run_id == moved.run_id
    assert _counts(db_url)[0] == 1


def test_not_a_run_directory_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db' / 'h.sqlite'}"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ResultsFileError, match="not a launchbench run"):
        ingest_run_dir(url, tmp_path / "empty")
    with pytest.raises(HistoryError, match="not a directory"):
        ingest_run_dir(url, tmp_path / "nothing-here")
    assert not (tmp_path / "db").exists()


@pytest.mark.parametrize("status", ["running", "interrupted"])
def test_unfinished_run_is_refused(db_url: str, tmp_path: Path, status: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    data = json.loads((QUICKSTART / "results.json").read_text())
    data["status"] = status
    (run / "results.json").write_text(json.dumps(data))
    with pytest.raises(HistoryError, match="half-written|interrupted"):
        ingest_run_dir(db_url, run)


def test_truncated_run_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_bytes((QUICKSTART / "results.json").read_bytes()[:5000])
    with pytest.raises(ResultsFileError, match="not valid JSON"):
        ingest_run_dir(f"sqlite:///{tmp_path / 'h.sqlite'}", run)
    assert not (tmp_path / "h.sqlite").exists()


def test_failed_ingest_leaves_nothing_half_written(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the run's rows were flushed rolls the whole run back (one transaction)."""
    import launchbench.history.ingest as ingest

    def broken(session, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise HistoryError("disk full (simulated)")

    with HistoryDB(db_url) as db:
        original = ingest.IngestOutcome
        monkeypatch.setattr(ingest, "IngestOutcome", broken)
        with pytest.raises(HistoryError, match="simulated"):
            ingest_run_dir(db, QUICKSTART)
        monkeypatch.setattr(ingest, "IngestOutcome", original)
    assert _counts(db_url) == (0, 0, 0)


def test_database_of_a_newer_schema_is_refused(db_url: str) -> None:
    HistoryDB(db_url).close()
    engine = create_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    engine.dispose()
    with pytest.raises(HistoryError, match="newer than this launchbench knows"):
        ingest_run_dir(db_url, QUICKSTART)


def test_locked_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    HistoryDB(f"sqlite:///{path}").close()
    holder = sqlite3.connect(path)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryError, match="locked by another process"):
            ingest_run_dir(HistoryDB(f"sqlite:///{path}", lock_timeout=0.1), QUICKSTART)
    finally:
        holder.rollback()
        holder.close()
    assert _counts(f"sqlite:///{path}") == (0, 0, 0)


def test_postgres_that_does_not_answer() -> None:
    with pytest.raises(HistoryError, match="does not answer") as info:
        HistoryDB("postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert "\n" not in str(info.value)


def test_url_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAUNCHBENCH_HISTORY_DB", raising=False)
    assert resolve_url(None) == "sqlite:///results/history.sqlite"
    monkeypatch.setenv("LAUNCHBENCH_HISTORY_DB", "postgresql+psycopg://u@h/db")
    assert resolve_url(None) == "postgresql+psycopg://u@h/db"
    assert resolve_url("x/h.sqlite") == "sqlite:///x/h.sqlite"
    with pytest.raises(LaunchbenchError, match="cannot use this database"):
        HistoryDB("nosuchdb://x/y")


def test_migrations_build_the_schema_the_models_declare(db_url: str) -> None:
    """The database the migrations build has every table, column and index of models.py (Alembic's
    autogenerate comparison finds nothing to add, drop or change)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from launchbench.history.models import Base

    HistoryDB(db_url).close()
    engine = create_engine(db_url)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []
    engine.dispose()


def test_a_database_of_the_first_revision_is_upgraded_keeping_its_runs(db_url: str) -> None:
    """A database at revision 0001 with a run in it: opening it migrates to the newest revision, the run
    stays, and new runs go in with every column."""
    from alembic import command
    from alembic.config import Config

    from launchbench.history.db import MIGRATIONS

    engine = create_engine(db_url)
    with engine.begin() as connection:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(
            text(
                "INSERT INTO runs (content_hash, run_dir, name, status, started, ingested, scenarios) "
                "VALUES ('x', '/r', 'old', 'complete', '2026-01-01 00:00:00', '2026-01-01 00:00:00', 'q')"
            )
        )
    engine.dispose()
    ingest_run_dir(db_url, QUICKSTART)
    with HistoryDB(db_url) as db, db.session() as s:
        assert [r.name for r in s.scalars(select(Run).order_by(Run.id))] == ["old", "quickstart-h200"]


def test_head_is_alembics_newest_revision() -> None:
    """Opening a database at migrations.HEAD skips Alembic: HEAD must be the newest revision there is."""
    from launchbench.history.db import _script
    from launchbench.history.migrations import HEAD

    assert _script().get_current_head() == HEAD
