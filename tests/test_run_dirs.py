"""Run directories are claimed atomically: runs started together in the same second get a default
directory each, and of two runs given one directory only one writes into it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.errors import ResultsFileError
from launchbench.results.store import claim_new_dir, create_run_dir, load_run, release_if_empty

TESTS = Path(__file__).parent
SCENARIO = TESTS / "data" / "scripted" / "three.yaml"

# `launchbench ARGS` on the scripted backend, every run's clock stopped at one second (so runs started
# together share their default directory's time stamp)
DRIVER = """
import datetime, functools, sys, types
from fakes import scripted_backend
from launchbench.run import runner

class Frozen(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=tz)

runner._dt = types.SimpleNamespace(datetime=Frozen, timezone=datetime.timezone)
runner.RunOptions = functools.partial(runner.RunOptions, backend_factory=scripted_backend)
from launchbench.cli import cli
cli(sys.argv[1:], prog_name="launchbench")
"""


def start_runs(cwd: Path, *argvs: list[str]) -> list[subprocess.CompletedProcess[str]]:
    """Start one `launchbench` process per argv at once; wait for all."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", DRIVER, *argv],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for argv in argvs
    ]
    done = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def test_two_runs_started_in_the_same_second_get_a_default_directory_each(tmp_path):
    argv = ["run", str(SCENARIO), "--no-isolate", "-q"]
    runs = start_runs(tmp_path, argv, argv)
    assert [r.returncode for r in runs] == [0, 0], [r.stderr for r in runs]
    made = sorted(p.name for p in (tmp_path / "results").iterdir())
    assert made == ["20260102-030405-three", "20260102-030405-three-2"]
    for name in made:
        record = load_run(tmp_path / "results" / name)
        assert record.status == "complete" and len(record.cases) == 5


def test_of_two_runs_given_one_directory_one_writes_and_the_other_is_refused(tmp_path):
    argv = ["run", str(SCENARIO), "--no-isolate", "-q", "-d", str(tmp_path / "shared")]
    runs = start_runs(tmp_path, argv, argv)
    assert sorted(r.returncode for r in runs) == [0, 2], [r.stderr for r in runs]
    refused = next(r for r in runs if r.returncode == 2)
    assert refused.stderr.strip() == (
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
