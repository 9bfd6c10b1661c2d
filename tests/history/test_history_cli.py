"""The history commands, `compare --baseline history` and `run --history` through the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from launchbench.cli import cli
from launchbench.cli.history import ingest_after_run

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "results" / "quickstart-h200"
QUICKSTART_B = REPO / "results" / "quickstart-h200-b"


def invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def _error_line(result) -> str:  # type: ignore[no-untyped-def]
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("launchbench: error: "), result.output
    return lines[0]


def test_ingest_list_trend_changes(db_url: str, stepped: list[Path]) -> None:
    result = invoke("history", "ingest", "--db", db_url, "--branch", "main", *stepped)
    assert result.exit_code == 0 and result.output.count("added") == 12
    assert invoke("history", "ingest", "--db", db_url, stepped[0]).output.count("already in the history") == 1
    listed = json.loads(
        invoke("history", "list", "--db", db_url, "--format", "json", "--driver", "590.10.01").output
    )["runs"]
    assert [r["name"] for r in listed] == [f"run-{i:02d}" for i in range(7, 13)]
    assert all(r["git_branch"] == "main" for r in listed)
    uuid, version = listed[0]["gpu_uuid"], listed[0]["launchbench_version"]
    by_env = json.loads(
        invoke(
            "history",
            "list",
            "--db",
            db_url,
            "--format",
            "json",
            "--gpu-uuid",
            uuid,
            "--launchbench",
            version,
        ).output
    )["runs"]
    assert len(by_env) == 12
    none = invoke("history", "list", "--db", db_url, "--gpu-uuid", "GPU-none", "--format", "json").output
    assert json.loads(none)["runs"] == []
    trend = invoke(
        "history", "trend", "quickstart/scale/length=100", "--db", db_url, "--format", "csv", "--last", "3"
    )
    lines = trend.output.strip().splitlines()
    assert lines[0].startswith("run_id,name,started,metric,median,ci_low,ci_high") and len(lines) == 4
    changes = json.loads(
        invoke("history", "changes", "--db", db_url, "--format", "json", "-m", "gpu_us_per_iter").output
    )["changes"]
    assert (
        changes
        and {c["run_after"] for c in changes} == {"run-07"}
        and {c["mode"] for c in changes} == {"graph"}
    )
    assert all(c["environment_changes"] == "driver 580.159.04 → 590.10.01" for c in changes)
    table = invoke("history", "changes", "--db", db_url, "-m", "gpu_us_per_iter")
    assert "run-06" in table.output and "run-07" in table.output


def test_compare_baseline_history(db_url: str, stepped: list[Path]) -> None:
    """Runs 1-6 are an A/A series (host drift only): run 6 against runs 1-5 has no slower row; run 7 (graph
    rows +8%) against runs 1-6 fails the gate on the graph rows, and the exit code says so."""
    assert invoke("history", "ingest", "--db", db_url, *stepped[:5]).exit_code == 0
    aa = invoke(
        "compare",
        "--baseline",
        "history",
        "--db",
        db_url,
        stepped[5],
        "--format",
        "json",
        "--fail-on",
        "wall_us_per_launch:5%",
        "--allow-blind",  # the host-bound rows of separate runs cannot see 5% (test_gate_blind)
    )
    assert aa.exit_code == 0, aa.output
    document = json.loads(aa.stdout)
    assert (
        document["counts"]["slower"] == document["counts"]["faster"] == 0 and document["counts"]["same"] > 0
    )
    assert document["baseline"]["source"].startswith("history (5 runs: run-01 … run-05")
    assert invoke("history", "ingest", "--db", db_url, stepped[5]).exit_code == 0
    step = invoke(
        "compare",
        "--baseline",
        "history",
        "--db",
        db_url,
        stepped[6],
        "--format",
        "csv",
        "--fail-on",
        "wall_us_per_launch:5%",
        "-m",
        "wall_us_per_launch",
    )
    assert step.exit_code == 1
    slower = {line.split(",")[1] for line in step.output.splitlines() if ",slower," in line}
    assert {"empty/length=100", "empty/length=1000", "scale/length=100", "scale/length=1000"} <= slower
    assert all(",graph," in line for line in step.output.splitlines() if ",slower," in line)


def test_compare_baseline_history_usage(db_url: str) -> None:
    db = db_url
    assert invoke("compare", "--baseline", "history", "--db", db, QUICKSTART, QUICKSTART).exit_code == 2
    empty = invoke("compare", "--baseline", "history", "--db", db, QUICKSTART)
    # a SQLite file not there yet is not made by reading a baseline from it; an empty database has no run
    missing = "no such history database (reading the baseline)" if db.startswith("sqlite") else "no run in"
    assert empty.exit_code == 2 and missing in _error_line(empty)


@pytest.mark.parametrize(
    ("command", "reading"),
    [
        (["list"], "the runs"),
        (["trend", "quickstart/empty/length=10"], "a trend"),
        (["changes"], "change points"),
        (["report", "-d", "page"], "the report's runs"),
    ],
)
def test_read_only_commands_refuse_a_missing_database_and_make_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], reading: str
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "sub" / "missing.sqlite"
    result = invoke("history", command[0], "--db", missing, *command[1:])
    line = _error_line(result)
    assert result.exit_code == 2
    assert f"{missing}: no such history database (reading {reading})" in line
    assert not missing.exists() and not missing.parent.exists() and not (tmp_path / "page").exists()


def test_bad_inputs_are_one_line_and_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "h.sqlite"
    (tmp_path / "not-a-run").mkdir()
    result = invoke("history", "ingest", "--db", db, tmp_path / "not-a-run")
    assert result.exit_code == 2 and "not a launchbench run" in _error_line(result)
    half = tmp_path / "half"
    shutil.copytree(QUICKSTART, half)
    data = json.loads((half / "results.json").read_text())
    (half / "results.json").write_text(json.dumps({**data, "status": "running"}))
    result = invoke("history", "ingest", "--db", db, QUICKSTART, half)
    assert result.exit_code == 2 and "half-written" in _error_line(result)
    assert not db.exists()  # every run is checked before the database is opened
    assert invoke("history", "ingest", "--db", db, QUICKSTART).exit_code == 0
    engine = create_engine(f"sqlite:///{db}")
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = 'ffff'"))
    engine.dispose()
    result = invoke("history", "list", "--db", db)
    assert result.exit_code == 2 and "newer than this launchbench knows" in _error_line(result)
    result = invoke("history", "list", "--db", "postgresql+psycopg://nobody:secret@127.0.0.1:1/none")
    line = _error_line(result)
    assert result.exit_code == 2 and "does not answer" in line and "secret" not in line
    result = invoke("history", "trend", "no-slash", "--db", tmp_path / "other.sqlite")
    assert result.exit_code == 2 and "SCENARIO/CASE" in _error_line(result)


def test_truncated_run_and_locked_database_are_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import launchbench.history.db as history_db
    import launchbench.history.location as location

    db = tmp_path / "h.sqlite"
    truncated = tmp_path / "truncated"
    truncated.mkdir()
    (truncated / "results.json").write_bytes((QUICKSTART / "results.json").read_bytes()[:5000])
    result = invoke("history", "ingest", "--db", db, truncated)
    assert result.exit_code == 2 and "not valid JSON" in _error_line(result)
    assert not db.exists()
    assert invoke("history", "ingest", "--db", db, QUICKSTART).exit_code == 0
    monkeypatch.setattr(history_db, "LOCK_TIMEOUT_S", 0.1)
    monkeypatch.setattr(location, "LOCK_TIMEOUT_S", 0.1)  # the reads of a current file (history.reading)
    holder = sqlite3.connect(db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        trend = ("history", "trend", "quickstart/scale/length=100")
        for args in (("history", "list"), trend, ("history", "ingest", QUICKSTART_B)):
            result = invoke(*args, "--db", db)
            assert result.exit_code == 2, result.output
            assert "locked by another process (tried for 0.1 s)" in _error_line(result)
    finally:
        holder.rollback()
        holder.close()
    assert [
        r["name"]
        for r in json.loads(invoke("history", "list", "--db", db, "--format", "json").output)["runs"]
    ] == ["quickstart-h200"]


def test_run_history_ingests_the_finished_run(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert ingest_after_run(db, QUICKSTART) == 0
    assert ingest_after_run(db, QUICKSTART) == 0
    assert ingest_after_run(db, tmp_path) == 2
    assert "--history" in invoke("run", "--help").output
    listed = json.loads(invoke("history", "list", "--db", db, "--format", "json").output)["runs"]
    assert [r["name"] for r in listed] == ["quickstart-h200"]


def test_trend_loads_only_what_it_needs(db_url: str) -> None:
    """`history trend` on an up-to-date database loads neither Alembic (the revision is read with one query)
    nor SQLAlchemy's ORM (queries are plain SQL) nor the statistics, tables or models of the other
    commands; on a SQLite file it does not load SQLAlchemy at all (the standard library's driver reads it)."""
    db = db_url
    assert invoke("history", "ingest", "--db", db, QUICKSTART).exit_code == 0
    heavy = (
        "alembic",
        "sqlalchemy.orm",
        "scipy",
        "pandas",
        "numpy",
        "pydantic",
        "rich",
        "ruptures",
        "matplotlib",
        *(("sqlalchemy", "launchbench.history.db", "statistics") if db.startswith("sqlite") else ()),
    )
    code = (
        "import sys\n"
        "from launchbench.cli import main\n"
        f"sys.argv = ['launchbench', 'history', 'trend', 'quickstart/scale/length=100', '--db', {db!r}, "
        "'--format', 'csv']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        f"print('loaded:', sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("run_id,name,started") and "quickstart-h200" in proc.stdout
    assert "loaded: []" in proc.stdout
