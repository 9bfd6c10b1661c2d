"""`run --resume DIR` finishes the run it is given, with the run's own scenario files and options, on the
scripted backend: a run stopped by SIGTERM is resumed with the command its message advises; other or
changed scenario files, and options that disagree with the run's, are refused; a run is never marked
complete with a planned case-pass missing."""

from __future__ import annotations

import functools
import os
import re
import shlex
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fakes import scripted_backend

from launchbench.cli import cli
from launchbench.errors import LaunchbenchError
from launchbench.report.console import ConsoleEvents
from launchbench.results.metadata import Overrides, Settings
from launchbench.results.store import load_run
from launchbench.run import runner

DATA = Path(__file__).parents[1] / "data" / "scripted"
OTHER = """name: other
description: One case that is not part of the run being resumed.
measure: {max_time: 0.2, min_samples: 5, warmup_time: 0.01}
chains:
  solo: [{kind: empty, repeat: 2}]
"""


@pytest.fixture(autouse=True)
def scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` measures with the scripted backend (in this process with --no-isolate)."""
    monkeypatch.setattr(
        runner, "RunOptions", functools.partial(runner.RunOptions, backend_factory=scripted_backend)
    )


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def sigterm_after(monkeypatch: pytest.MonkeyPatch, cases: int) -> None:
    """SIGTERM to this process once `cases` case-passes have finished (run turns it into an interrupt)."""
    finished = ConsoleEvents.case_finished
    left = [cases]

    def case_finished(self, result):  # type: ignore[no-untyped-def]
        finished(self, result)
        left[0] -= 1
        if left[0] == 0:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(ConsoleEvents, "case_finished", case_finished)


def interrupted_run(
    monkeypatch: pytest.MonkeyPatch,
    run_dir: Path,
    *options: str,
    cases: int = 3,
    scenario: Path = DATA / "three.yaml",
) -> list[str]:
    """`scenario` (three.yaml) with `options`, stopped by SIGTERM after `cases` case-passes: the resume
    command its message advises, as arguments after `launchbench`."""
    with monkeypatch.context() as patch:
        sigterm_after(patch, cases)
        result = invoke("run", str(scenario), "-d", str(run_dir), "--no-isolate", *options)
    assert result.exit_code == 130, result.output
    assert load_run(run_dir).status == "interrupted"
    advised = re.search(r"finish with `launchbench (.+?)`$", result.output, re.MULTILINE)
    assert advised, result.output
    return shlex.split(advised.group(1))


def copy_of_three(tmp_path: Path, extra: str = "") -> Path:
    """three.yaml copied into tmp_path (with `extra` lines at its end), to be changed or removed."""
    scenario = tmp_path / "three.yaml"
    scenario.write_text((DATA / "three.yaml").read_text() + extra)
    return scenario


def test_a_run_stopped_by_sigterm_resumes_with_its_own_passes(tmp_path, monkeypatch):
    run_dir = tmp_path / "[run] dir" / ("long" * 30)  # the advised command quotes it, on one line
    advice = interrupted_run(monkeypatch, run_dir, "--passes", "30")
    started = load_run(run_dir)
    assert started.settings.overrides.model_dump() == {"passes": 30}
    result = invoke(*advice)
    assert result.exit_code == 0, result.output
    record = load_run(run_dir)
    assert record.status == "complete"
    assert [c.passes_done for c in record.cases] == [30] * 5
    assert record.settings.overrides.model_dump() == {"passes": 30}
    assert record.settings.isolate is False and record.settings == started.settings


def test_resume_with_the_recorded_options_given_again_agrees(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, "--passes", "3", "--max-time", "0.4")
    result = invoke("run", "--resume", str(run_dir), "--passes", "3", "--max-time", "0.4", "--no-isolate")
    assert result.exit_code == 0, result.output
    assert [c.passes_done for c in load_run(run_dir).cases] == [3] * 5


@pytest.mark.parametrize(
    ("again", "named"),
    [
        (["--passes", "5"], "--passes 5: the run was started with --passes 3"),
        (["--max-time", "1"], "--max-time 1: the run was started without --max-time"),
        (["--quick"], "--quick: the run was started without --quick"),
        (["--no-isolate", "--device", "1"], "--device 1: the run was started with --device 0"),
    ],
)
def test_an_option_that_disagrees_with_the_run_is_refused(tmp_path, monkeypatch, again, named):
    run_dir = tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, "--passes", "3")
    before = (run_dir / "results.journal.jsonl").read_bytes()
    result = invoke("run", "--resume", str(run_dir), *again)
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert "\n" not in message and "Traceback" not in message
    assert named in message and str(run_dir) in message
    assert (run_dir / "results.journal.jsonl").read_bytes() == before  # nothing measured or written


def test_no_isolate_on_a_run_of_worker_processes_is_refused(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    with monkeypatch.context() as patch:
        sigterm_after(patch, 2)
        assert invoke("run", str(DATA / "three.yaml"), "-d", str(run_dir)).exit_code == 130
    result = invoke("run", "--resume", str(run_dir), "--no-isolate")
    assert result.exit_code == 2
    assert "--no-isolate: the run was started without --no-isolate" in result.output


def test_another_scenario_file_is_refused(tmp_path, monkeypatch):
    """Found: `run other.yaml --resume DIR` merged other/solo into an interrupted three.yaml run and called
    it complete with cases never measured."""
    run_dir = tmp_path / "run"
    interrupted_run(monkeypatch, run_dir)
    other = tmp_path / "other.yaml"
    other.write_text(OTHER)
    result = invoke("run", str(other), "--resume", str(run_dir), "--no-isolate")
    assert result.exit_code == 2, result.output
    message = result.output.strip()
    assert "\n" not in message
    assert f"{other}: another scenario file than the run's" in message and "three.yaml" in message
    record = load_run(run_dir)
    assert record.status == "interrupted" and len(record.cases) == 3


def test_a_scenario_file_left_out_is_refused(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    other = tmp_path / "other.yaml"
    other.write_text(OTHER)
    with monkeypatch.context() as patch:
        sigterm_after(patch, 2)
        result = invoke("run", str(DATA / "three.yaml"), str(other), "-d", str(run_dir), "--no-isolate")
    assert result.exit_code == 130
    result = invoke("run", str(DATA / "three.yaml"), "--resume", str(run_dir), "--no-isolate")
    assert result.exit_code == 2, result.output
    assert f"{other}" in result.output and "scenario 'other'" in result.output
    assert invoke("run", "--resume", str(run_dir), "--no-isolate").exit_code == 0  # its own two files


def test_the_same_file_changed_is_refused_and_named(tmp_path, monkeypatch):
    scenario, run_dir = copy_of_three(tmp_path), tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, scenario=scenario)
    scenario.write_text(scenario.read_text().replace("length: [1, 10]", "length: [1, 10, 100]"))
    for given in ([], [str(scenario)]):
        result = invoke("run", *given, "--resume", str(run_dir), "--no-isolate")
        assert result.exit_code == 2, result.output
        assert f"{scenario}: changed since the run measured scenario 'three'" in result.output
    result = invoke("run", "--resume", str(run_dir), "--no-isolate", "--allow-changed-scenario")
    assert result.exit_code == 0, result.output
    assert "resuming anyway" in result.output


def test_a_copy_of_the_same_file_elsewhere_resumes(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    interrupted_run(monkeypatch, run_dir)
    copy = tmp_path / "moved.yaml"
    copy.write_text((DATA / "three.yaml").read_text())
    result = invoke("run", str(copy), "--resume", str(run_dir), "--no-isolate")
    assert result.exit_code == 0, result.output
    assert load_run(run_dir).status == "complete"


def test_a_run_is_never_marked_complete_with_a_case_pass_missing(tmp_path, monkeypatch):
    """Whatever the schedule did, the last check counts every planned case × pass: a case left out stays
    missing, the run stays interrupted and the error says which."""
    plan = runner.plan([DATA / "three.yaml"], Overrides(passes=2))
    monkeypatch.setattr(runner, "pass_schedule", lambda cases, record: [(cases[0], 0), (cases[0], 1)])
    with pytest.raises(LaunchbenchError, match=r"4 of 5 cases are missing passes \(three/empty/length=10"):
        runner.run(plan, tmp_path / "run", runner.RunOptions(isolate=False))
    assert load_run(tmp_path / "run").status == "interrupted"


def test_the_case_limit_the_run_was_started_with_holds_on_resume(tmp_path, monkeypatch):
    scenario, run_dir = copy_of_three(tmp_path, "max_cases: 3\n"), tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, "--max-cases", "5", scenario=scenario)
    assert load_run(run_dir).settings.max_cases == 5
    result = invoke("run", "--resume", str(run_dir))
    assert result.exit_code == 0, result.output
    assert len(load_run(run_dir).cases) == 5
    assert (
        "--max-cases 4: the run was started with --max-cases 5"
        in invoke("run", "--resume", str(run_dir), "--max-cases", "4").output
    )


def test_resume_into_another_directory_and_a_scenario_file_gone_are_one_line_each(tmp_path, monkeypatch):
    scenario, run_dir = copy_of_three(tmp_path), tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, scenario=scenario)
    result = invoke("run", "--resume", str(run_dir), "-d", str(tmp_path / "elsewhere"))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "--resume writes into the run it resumes" in result.output
    scenario.unlink()
    result = invoke("run", "--resume", str(run_dir))
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert str(scenario) in result.output


def test_a_resumed_run_that_recorded_no_settings_records_the_ones_it_used(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    interrupted_run(monkeypatch, run_dir, "--passes", "2")
    unrecorded = load_run(run_dir).model_copy(
        update={"settings": Settings()}
    )  # as a hand-written results.json
    plan = runner.plan([DATA / "three.yaml"], Overrides(passes=2))
    record = runner.run(
        plan, run_dir, runner.RunOptions(isolate=False, overrides=Overrides(passes=2)), resume=unrecorded
    )
    assert record.status == "complete" and [c.passes_done for c in record.cases] == [2] * 5
    assert record.settings.model_dump() == {
        "overrides": {"passes": 2},
        "isolate": False,
        "device": 0,
        "max_cases": None,
    }
