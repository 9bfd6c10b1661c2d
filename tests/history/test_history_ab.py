"""`ab --history` and `run --history` through the CLI on the scripted backend (tests/fakes.py): the runs
go into the history when the command finishes (also when the gate fails), not when it was interrupted;
the two sides of an ab invocation are told apart by its id and their side."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from builders import TINY_AB_SCENARIO
from click.testing import CliRunner
from fakes import ORDER_FILE_VARIABLE, SLOWDOWN_VARIABLE, recording_backend, scripted_backend

from launchbench.cli import cli
from launchbench.history import ENV_VAR
from launchbench.history.db import HistoryDB
from launchbench.history.ingest import ab_fields
from launchbench.results.store import load_run
from launchbench.run import runner

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
SCENARIO = TINY_AB_SCENARIO


@pytest.fixture
def scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scenario file; run and ab measure it with the scripted backends (ab's workers import them from
    tests/); no database variable from the environment."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv(ORDER_FILE_VARIABLE, str(tmp_path / "order.txt"))
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(SCENARIO)
    return scenario


def _use_backend(monkeypatch: pytest.MonkeyPatch, factory: object) -> None:
    monkeypatch.setattr(runner, "RunOptions", functools.partial(runner.RunOptions, backend_factory=factory))


def _listed(db: str, *filters: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["history", "list", "--db", db, "--format", "json", *filters])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["runs"]  # type: ignore[no-any-return]


def _ab(scenario: Path, out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(
        cli,
        [
            "ab",
            str(scenario),
            "--b",
            f"env={SLOWDOWN_VARIABLE}=0.3",
            "--out",
            str(out),
            "--passes",
            "2",
            "-q",
            *extra,
        ],
    )


def test_ab_ingests_both_sides_when_the_gate_fails(
    db_url: str, scripted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's eager launches cost 30% more: the gate fails (exit 1) and both sides are in the history (the
    database from $LAUNCHBENCH_HISTORY_DB), told apart by side and paired by the invocation's id; the
    outcome lines go to stderr, so the JSON on stdout stays whole."""
    _use_backend(monkeypatch, recording_backend)
    monkeypatch.setenv(ENV_VAR, db_url)
    out = tmp_path / "ab"
    result = _ab(scripted, out, "--fail-on", "wall_us_per_launch:5%", "--format", "json")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["counts"]["slower"] > 0
    assert "history: " in result.stderr and "run 1 added" in result.stderr
    runs = _listed(db_url)
    ab_id = load_run(out / "a").settings.ab.id
    assert ab_id == load_run(out / "b").settings.ab.id
    assert [(r["ab_side"], r["ab_id"], Path(str(r["run_dir"]))) for r in runs] == [
        ("A", ab_id, (out / "a").resolve()),
        ("B", ab_id, (out / "b").resolve()),
    ]
    assert [r["ab_side"] for r in _listed(db_url, "--ab", ab_id, "--ab-side", "b")] == ["B"]
    assert _listed(db_url, "--ab", "not-an-id") == []
    again = _ab(scripted, tmp_path / "ab2", "--format", "json")  # a second invocation, gate passes
    assert again.exit_code == 0, again.output
    assert len(_listed(db_url)) == 4 and len(_listed(db_url, "--ab", ab_id)) == 2
    assert {r["ab_id"] for r in _listed(db_url, "--ab-side", "A")} != {ab_id}


def test_ab_ingests_nothing_without_history_or_when_interrupted(
    db_url: str, scripted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_backend(monkeypatch, recording_backend)
    monkeypatch.setenv(ENV_VAR, db_url)
    HistoryDB(db_url).close()  # the database exists and stays empty
    assert _ab(scripted, tmp_path / "off", "--no-history").exit_code == 0

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("launchbench.run.ab.run_ab", interrupted)
    result = _ab(scripted, tmp_path / "stopped", "--history")
    assert result.exit_code == 130, result.output
    assert _listed(db_url) == []


def test_run_history_ingests_the_finished_run(
    db_url: str, scripted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _use_backend(monkeypatch, scripted_backend)
    out = tmp_path / "run"
    result = CliRunner().invoke(
        cli, ["run", str(scripted), "-d", str(out), "--no-isolate", "-q", "--history", "--db", db_url]
    )
    assert result.exit_code == 0, result.output
    assert f"history: {out}: run 1 added" in result.output
    runs = _listed(db_url)
    assert [(r["name"], r["gpu_name"], r["ab_id"]) for r in runs] == [("run", "Scripted GPU", None)]


def test_ab_sides_without_a_recorded_id_share_one_from_their_directory() -> None:
    """The committed H200 ab runs carry no id in their settings: both sides get one from the ab directory."""
    root = REPO / "results" / "ab-h200" / "lockstep" / "aa-1"
    a, b = (ab_fields(load_run(root / side)) for side in ("a", "b"))
    assert a["ab_side"] == "A" and b["ab_side"] == "B"
    assert a["ab_id"] == b["ab_id"] and a["ab_id"] is not None
    other = ab_fields(load_run(REPO / "results" / "ab-h200" / "lockstep" / "aa-2" / "a"))
    assert other["ab_id"] != a["ab_id"]
    assert ab_fields(load_run(REPO / "results" / "quickstart-h200")) == {"ab_id": None, "ab_side": None}
