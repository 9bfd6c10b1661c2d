"""Run directories are claimed atomically: runs started together in the same second get a default
directory each, and of two runs given one directory only one writes into it."""

from __future__ import annotations

import datetime
import functools
import multiprocessing
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakes import scripted_backend

from launchbench.cli import cli
from launchbench.errors import ResultsFileError
from launchbench.results.store import claim_new_dir, create_run_dir, load_run, release_if_empty
from launchbench.run import runner

TESTS = Path(__file__).parents[1]
SCENARIO = TESTS / "data" / "scripted" / "three.yaml"
FORK = multiprocessing.get_context("fork")  # children start with launchbench loaded: the race is the claim


class Frozen(datetime.datetime):
    """Every run's clock stopped at one second, so runs started together share their default name."""

    @classmethod
    def now(cls, tz: datetime.tzinfo | None = None) -> Frozen:
        return cls(2026, 1, 2, 3, 4, 5, tzinfo=tz)


def _run(argv: list[str], start: FORK.Barrier, results: FORK.Queue) -> None:  # type: ignore[name-defined]
    """`launchbench ARGV` on the scripted backend, once every process is ready."""
    runner._dt = types.SimpleNamespace(datetime=Frozen, timezone=datetime.timezone)  # type: ignore[attr-defined]
    runner.RunOptions = functools.partial(runner.RunOptions, backend_factory=scripted_backend)  # type: ignore[misc]
    start.wait(timeout=60)
    result = CliRunner().invoke(cli, argv)
    results.put((argv, result.exit_code, result.stderr.strip()))


def start_runs(*argvs: list[str]) -> list[tuple[list[str], int, str]]:
    """Start one `launchbench` process per argv, all released at once: (argv, exit code, stderr) each."""
    import launchbench.report.console  # noqa: F401  (what `run` loads on its way, loaded before the fork)
    import launchbench.report.run_files  # noqa: F401

    start, results = FORK.Barrier(len(argvs)), FORK.Queue()
    procs = [FORK.Process(target=_run, args=(list(argv), start, results)) for argv in argvs]
    for proc in procs:
        proc.start()
    done = [results.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    return done


def test_runs_started_together_each_claim_a_directory(tmp_path):
    """Four runs at once, in the same second: two with the default directory both write, each into its
    own; two given one -d: one writes, the other is refused."""
    default = ["run", str(SCENARIO), "--no-isolate", "-q", "--results-root", str(tmp_path / "results")]
    shared = ["run", str(SCENARIO), "--no-isolate", "-q", "-d", str(tmp_path / "shared")]
    runs = start_runs(default, default, shared, shared)
    assert sorted(code for argv, code, _ in runs if argv == default) == [0, 0], runs
    made = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert made == ["20260102-030405-three", "20260102-030405-three-2"]
    for name in made:
        record = load_run(tmp_path / "results" / name)
        assert record.status == "complete" and len(record.cases) == 5
    assert sorted(code for argv, code, _ in runs if argv == shared) == [0, 2], runs
    refused = next(err for argv, code, err in runs if code == 2)
    assert refused == (
        f"launchbench: error: {tmp_path / 'shared'} already holds results; choose another -d/--out-dir "
        "(runs are never overwritten)"
    )
    assert load_run(tmp_path / "shared").status == "complete"


def test_claim_new_dir_adds_a_suffix_where_the_name_is_taken(tmp_path):
    first = claim_new_dir(tmp_path / "root" / "20260102-030405-three")
    second = claim_new_dir(tmp_path / "root" / "20260102-030405-three")
    third = claim_new_dir(tmp_path / "root" / "20260102-030405-three")
    assert [p.name for p in (first, second, third)] == [
        "20260102-030405-three",
        "20260102-030405-three-2",
        "20260102-030405-three-3",
    ]
    assert all(p.is_dir() for p in (first, second, third))


def test_an_existing_empty_directory_is_claimed_once(tmp_path):
    (tmp_path / "run").mkdir()
    assert create_run_dir(tmp_path / "run") == tmp_path / "run"
    with pytest.raises(ResultsFileError, match="choose another -d/--out-dir"):
        create_run_dir(tmp_path / "run")


def test_a_claimed_directory_is_given_back_only_when_empty(tmp_path):
    empty, used = claim_new_dir(tmp_path / "a"), claim_new_dir(tmp_path / "b")
    (used / "results.json").write_text("{}")
    release_if_empty(empty)
    release_if_empty(used)
    assert not empty.exists() and (used / "results.json").exists()
