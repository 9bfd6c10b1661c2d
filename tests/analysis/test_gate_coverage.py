"""Issue 13, classes 4 and 8: a gate that checks nothing fails, each reason relaxed by its own flag, and
scenario text that changed between runs (or since a run) is said; `run --resume` refuses a changed file."""

from __future__ import annotations

from pathlib import Path

import compare_helpers
import pytest
from builders import expectation_scenario, first_graph_row
from click.testing import CliRunner

from launchbench.cli import cli
from launchbench.results.schema import RunRecord

baseline_run = compare_helpers.baseline_run
GATE = ["--fail-on", "wall_us_per_launch:5%", "--allow-blind"]  # the blind rows: test_blind_*


no_step_summary = compare_helpers.no_step_summary  # autouse
invoke = compare_helpers.invoke
save = compare_helpers.save


def _renamed(run: RunRecord) -> RunRecord:
    return run.model_copy(
        update={"cases": [c.model_copy(update={"case_id": c.case_id + "-other"}) for c in run.cases]}
    )


def _without_cases(run: RunRecord) -> RunRecord:
    return run.model_copy(update={"cases": []})


def _first_dropped(run: RunRecord) -> RunRecord:
    return run.model_copy(update={"cases": run.cases[1:]})


def _status(status: str):
    return lambda run: run.model_copy(update={"status": status})


def _same(run: RunRecord) -> RunRecord:
    return run


# name → (make baseline, make current, the flag that relaxes it or None, what the reason says)
GATE_CASES = {
    "no-rows-in-common": (_same, _renamed, "--allow-empty", "no rows in common"),
    "row-missing-in-current": (_same, _first_dropped, "--allow-missing", "missing from the current run"),
    "current-interrupted": (
        _same,
        _status("interrupted"),
        "--allow-interrupted",
        "the current run interrupted",
    ),
    "current-failed": (_same, _status("failed"), "--allow-interrupted", "the current run failed"),
    "current-never-finished": (_same, _status("running"), "--allow-interrupted", "never finished"),
}


@pytest.mark.parametrize("side", ["baseline", "current"])
def test_a_run_with_no_cases_is_no_run(baseline_run: RunRecord, tmp_path: Path, side: str) -> None:
    """A run that measured nothing is refused on reading (exit 2, one line naming the file and the key),
    with a gate or without, whichever side it is."""
    runs = {"baseline": baseline_run, "current": baseline_run, side: _without_cases(baseline_run)}
    base, cur = (save(tmp_path, name, runs[name]) for name in ("baseline", "current"))
    for gate in ([], GATE):
        result = CliRunner().invoke(cli, ["compare", base, cur, *gate])
        assert result.exit_code == 2, result.output
        assert (
            result.stderr
            == f"launchbench: error: {tmp_path / side / 'results.json'}: cases: no cases; a run that measured nothing is not a run\n"
        )


@pytest.mark.parametrize("name", sorted(GATE_CASES))
def test_a_gate_that_checks_nothing_fails(baseline_run: RunRecord, tmp_path: Path, name: str) -> None:
    make_base, make_cur, flag, reason = GATE_CASES[name]
    base = save(tmp_path, "baseline", make_base(baseline_run))
    cur = save(tmp_path, "current", make_cur(baseline_run))
    failed = invoke("compare", base, cur, *GATE)
    assert failed.exit_code == 1, failed.output
    assert reason in failed.stdout
    assert flag in failed.stdout  # the message names the flag that relaxes it
    if flag == "--allow-empty":  # every baseline row is missing too: each reason has its own flag
        assert invoke("compare", base, cur, *GATE, flag).exit_code == 1
        relaxed = invoke("compare", base, cur, *GATE, flag, "--allow-missing")
        assert "allowed by --allow-empty" in relaxed.stdout
    else:
        relaxed = invoke("compare", base, cur, *GATE, flag)
    assert relaxed.exit_code == 0, relaxed.output


def test_a_gate_on_a_metric_no_row_has_fails(baseline_run: RunRecord, tmp_path: Path) -> None:
    failed_rows = baseline_run.model_copy(
        update={
            "cases": [
                c.model_copy(
                    update={
                        "modes": {m: r.model_copy(update={"status": "failed"}) for m, r in c.modes.items()}
                    }
                )
                for c in baseline_run.cases
            ]
        }
    )
    base, cur = save(tmp_path, "baseline", baseline_run), save(tmp_path, "current", failed_rows)
    result = invoke("compare", base, cur, *GATE, "--allow-missing")
    assert result.exit_code == 1, result.output
    assert "evaluated no check" in result.stdout
    assert invoke("compare", base, cur, *GATE, "--allow-missing", "--allow-empty").exit_code == 0


def test_an_unfinished_baseline_is_a_warning(baseline_run: RunRecord, tmp_path: Path) -> None:
    base = save(tmp_path, "baseline", _status("interrupted")(baseline_run))
    cur = save(tmp_path, "current", baseline_run)
    result = invoke("compare", base, cur, *GATE)
    assert result.exit_code == 0, result.output
    assert "the baseline run interrupted" in result.stdout


def test_without_a_gate_the_problems_are_warnings(baseline_run: RunRecord, tmp_path: Path) -> None:
    base, cur = (
        save(tmp_path, "baseline", baseline_run),
        save(tmp_path, "current", _renamed(_status("interrupted")(baseline_run))),
    )
    result = invoke("compare", base, cur)
    assert result.exit_code == 0
    assert "warning: the current run interrupted" in result.stderr
    assert "warning: the runs have no rows in common" in result.stderr


def test_compare_says_when_the_scenario_text_differs(baseline_run: RunRecord, tmp_path: Path) -> None:
    edited = baseline_run.model_copy(
        update={"scenarios": [s.model_copy(update={"sha256": "f" * 64}) for s in baseline_run.scenarios]}
    )
    base, cur = save(tmp_path, "baseline", baseline_run), save(tmp_path, "current", edited)
    result = invoke("compare", base, cur, *GATE)
    assert result.exit_code == 0, result.output
    assert "ran from different file contents" in result.stdout
    assert "ran from different file contents" in invoke("compare", base, cur).stderr


# --- check ---------------------------------------------------------------------------------------------


def _expectation_file(tmp_path: Path, run: RunRecord) -> tuple[Path, RunRecord]:
    scenario, case, median = first_graph_row(run)
    file = expectation_scenario(
        tmp_path / "s.yaml",
        scenario,
        f"  - case: '{case}'\n    metric: wall_us_per_launch\n    max: {median * 2}\n",
    )
    return file, run


@pytest.mark.parametrize(
    ("status", "flag"), [("interrupted", "--allow-interrupted"), ("running", "--allow-interrupted")]
)
def test_check_of_an_unfinished_run_fails(
    baseline_run: RunRecord, tmp_path: Path, status: str, flag: str
) -> None:
    file, run = _expectation_file(tmp_path, baseline_run)
    path = save(tmp_path, "run", _status(status)(run))
    failed = invoke("check", path, "--scenario", str(file))
    assert failed.exit_code == 1, failed.output
    assert flag in failed.stdout
    assert invoke("check", path, "--scenario", str(file), flag).exit_code == 0


def test_check_notes_a_scenario_file_that_changed(baseline_run: RunRecord, tmp_path: Path) -> None:
    file, run = _expectation_file(tmp_path, baseline_run)
    result = invoke("check", save(tmp_path, "run", run), "--scenario", str(file))
    assert result.exit_code == 0, result.output
    assert (
        "changed since the run measured scenario" in result.stdout
    )  # the file's sha256 is not the recorded one


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("  - metric: wall_us_per_lanch\n    max: 1\n", "did you mean 'wall_us_per_launch'?"),
        ("  - case: 'nope/*'\n    metric: speedup\n    min: 1\n", "matches no case"),
        ("  - metric: speedup\n    min: 3\n    max: 1\n", "max (1) is below min (3)"),
    ],
)
def test_check_reports_scenario_mistakes_as_input_errors(
    baseline_run: RunRecord, tmp_path: Path, expect: str, message: str
) -> None:
    scenario, _, _ = first_graph_row(baseline_run)
    file = expectation_scenario(tmp_path / "s.yaml", scenario, expect)
    result = invoke("check", save(tmp_path, "run", baseline_run), "--scenario", str(file))
    assert result.exit_code == 2, result.output
    assert message in result.stderr and f"{file}:" in result.stderr


# --- run --resume --------------------------------------------------------------------------------------


def test_resume_refuses_a_changed_scenario_file(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\ndescription: d\nchain:\n  - kind: empty\n", encoding="utf-8")
    from launchbench.run import runner

    plan = runner.plan([scenario])
    record = RunRecord(
        launchbench_version="0",
        started="2026-01-01T00:00:00+00:00",
        status="interrupted",
        scenarios=plan.scenarios,
    )
    run_dir = save(tmp_path, "run", record)
    scenario.write_text("name: s\ndescription: edited\nchain:\n  - kind: empty\n", encoding="utf-8")
    result = invoke("run", "--resume", run_dir, "--no-isolate")
    assert result.exit_code == 2
    assert (
        "changed since the run measured scenario 's'" in result.stderr
        and "--allow-changed-scenario" in result.stderr
    )
    allowed = invoke("run", "--resume", run_dir, "--no-isolate", "--allow-changed-scenario")
    assert (
        "changed since the run" not in allowed.stderr.split("error:")[-1]
    )  # it went on (to the GPU check here)
    assert "resuming anyway" in allowed.stderr
