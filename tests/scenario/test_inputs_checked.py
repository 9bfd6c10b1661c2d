"""Issue 13: what the scenario side checks before any work (YAML 1.2 scalars, the cost of an expansion,
command-line numbers under the file's rules, special files, the same file twice). The refusals of single
bad files are in tests/scenario/test_bad_inputs.py (tests/data/bad); these are the cases a table of files cannot
hold: generated files, good files whose values changed meaning, and command lines."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchbench.cli import cli
from launchbench.errors import LaunchbenchError, ScenarioError
from launchbench.results.metadata import Overrides
from launchbench.run import runner
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.load import load_scenario, load_scenario_file
from launchbench.scenario.sweep import MAX_EXPANDED_STEPS

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --- YAML 1.2 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("literal", "value"),
    [
        ("010", 10),  # YAML 1.1: octal 8
        ("0o17", 15),
        ("0x1F", 31),
        ("1e6", 1_000_000.0),
        ("-5", -5),
        (".5", 0.5),
        ("'1:30'", "1:30"),
        ("1:30", "1:30"),  # YAML 1.1: 90
        ("1_000", "1_000"),  # YAML 1.1: 1000
        ("yes", "yes"),  # YAML 1.1: true
        ("off", "off"),  # YAML 1.1: false
        ("2024-01-01", "2024-01-01"),  # YAML 1.1: a date
    ],
)
def test_yaml_1_2_scalars(tmp_path, literal, value):
    path = _write(
        tmp_path / "s.yaml", f"name: s\ndescription: d\nparams:\n  p: {literal}\nchain:\n  - kind: empty\n"
    )
    got = load_scenario(path).params["p"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("label", ["no", "yes", "on", "off", "1:30", "y"])
def test_text_where_text_is_expected(tmp_path, label):
    path = _write(
        tmp_path / "s.yaml", f"name: s\ndescription: d\nchain:\n  - kind: empty\n    label: {label}\n"
    )
    (case,) = expand_scenario(path)
    assert case.steps[0].label == label


def test_octal_looking_size_is_decimal(tmp_path):
    path = _write(tmp_path / "s.yaml", "name: s\ndescription: d\nchain:\n  - kind: scale\n    size: 010\n")
    assert expand_scenario(path)[0].steps[0].size == 10


def test_booleans_are_true_and_false(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nsweep:\n  n: {start: 1, stop: 3, num: 3, scale: linear, integer: false}\n"
        "chain:\n  - kind: scale\n    size: 8\n    alpha: $n\n",
    )
    assert [c.params["n"] for c in expand_scenario(path)] == [1.0, 2.0, 3.0]


# --- what expansion costs -----------------------------------------------------------------------------


def _long_sweep(path: Path, cases: int, steps: int) -> Path:
    """A file inside every per-field limit whose expansion is cases × steps steps."""
    body = "".join("  - {kind: empty, repeat: $n}\n" for _ in range(steps))
    values = ", ".join(str(i + 1) for i in range(cases))
    return _write(path, f"name: big\ndescription: d\nsweep:\n  n: [{values}]\nchain:\n{body}")


def test_a_480_kb_sweep_is_refused_before_expanding(tmp_path):
    path = _long_sweep(tmp_path / "big.yaml", 1000, 15_000)
    assert 400_000 < path.stat().st_size < 600_000
    tracemalloc.start()
    try:
        with pytest.raises(ScenarioError) as info:
            expand_scenario(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "15,000,000 steps" in message and f"limit of {MAX_EXPANDED_STEPS:,}" in message
    assert "1,000 cases × 15,000 steps" in message
    assert info.value.line == 5 and info.value.key_path == "chain"
    assert peak < 300 * 1024 * 1024  # the file's own document, not the expansion (GBs)


def test_validate_and_run_refuse_the_expansion_with_exit_2(tmp_path):
    path = _long_sweep(tmp_path / "big.yaml", 100, 2_001)  # 200,100 steps
    for args in (["validate", str(path)], ["run", "--no-isolate", "--out", str(tmp_path / "run"), str(path)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2, result.output
        assert "200,100 steps" in result.stderr
    assert not (tmp_path / "run").exists()


def test_steps_without_sweep_values_are_shared_between_cases(tmp_path):
    path = _write(
        tmp_path / "s.yaml",
        "name: s\ndescription: d\nsweep:\n  n: [1, 2, 3]\nchain:\n  - kind: empty\n  - kind: empty\n    repeat: $n\n",
    )
    cases = expand_scenario(path)
    assert [c.launches_per_iter for c in cases] == [2, 3, 4]
    assert cases[0].steps[0] is cases[2].steps[0]
    assert cases[0].steps[1] is not cases[1].steps[1]


# --- command-line numbers, held to the file's rules ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-time", "nan"], "--max-time nan: Input should be a finite number"),
        (["--max-time", "inf"], "--max-time inf: Input should be a finite number"),
        (["--max-time", "0"], "greater than 0"),
        (["--max-time", "1e9"], "less than or equal to 86400"),
        (["--target-noise", "nan"], "--target-noise nan: Input should be a finite number"),
        (["--target-noise", "1.5"], "less than or equal to 1"),
        (["--min-samples", "2"], "greater than or equal to 3"),
        (["--min-samples", "1000000000"], "less than or equal to 1000000"),
        (["--passes", "0"], "greater than or equal to 1"),
        (["--passes", "101"], "less than or equal to 100"),
        (["--max-time", "soon"], "is not a valid float"),
    ],
)
def test_run_refuses_numbers_the_file_would_refuse(tmp_path, args, message):
    result = CliRunner().invoke(cli, ["run", *args, "--out", str(tmp_path / "run"), str(QUICKSTART)])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "run").exists()


def test_min_samples_from_the_command_line_meets_the_files_max_samples():
    with pytest.raises(LaunchbenchError, match=r"max_samples \(2000\) is below min_samples \(5000\)"):
        runner.plan([QUICKSTART], Overrides(min_samples=5000))
    plan = runner.plan([QUICKSTART], Overrides(min_samples=2000, max_time=0.5))
    assert {(c.measure.min_samples, c.measure.max_time) for c in plan.cases} == {(2000, 0.5)}


# --- files that are not plain files; the same file twice ----------------------------------------------


def test_symlink_loop_is_reported_as_such(tmp_path):
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(ScenarioError, match="symbolic links"):
        load_scenario_file(loop)
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(ScenarioError, match="symbolic link to a file that does not exist"):
        load_scenario_file(dangling)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ScenarioError, match="FIFO"):
        load_scenario_file(fifo)  # no writer: a blocking open would never return


def test_unreadable_file(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    path = _write(tmp_path / "s.yaml", "name: s\n")
    path.chmod(0)
    with pytest.raises(ScenarioError, match="cannot be read: permission denied"):
        load_scenario_file(path)


def test_validate_refuses_a_file_given_twice(tmp_path):
    result = CliRunner().invoke(cli, ["validate", str(QUICKSTART), str(QUICKSTART)])
    assert result.exit_code == 2
    assert "given twice" in result.stderr
    copy = _write(tmp_path / "copy.yaml", QUICKSTART.read_text(encoding="utf-8"))
    result = CliRunner().invoke(cli, ["validate", str(QUICKSTART), str(copy)])
    assert result.exit_code == 2
    assert "scenario name 'quickstart' is used by another file" in result.stderr


def test_the_exact_check_agrees_with_the_prescan(tmp_path):
    """The event-stream prescan refuses before building; the check after building says the same."""
    from launchbench.scenario.expand import expand_loaded

    path = _long_sweep(tmp_path / "big.yaml", 100, 2_001)
    with pytest.raises(ScenarioError) as early:
        expand_scenario(path)
    loaded = load_scenario_file(path)  # no prescan
    with pytest.raises(ScenarioError) as late:
        expand_loaded(loaded)
    assert str(early.value) == str(late.value)


def test_the_prescan_counts_distinct_range_values(tmp_path):
    """A log range of 10,000 integers from 1 to 10 holds 10 values: 10 cases × 30 steps is allowed."""
    body = "".join("  - {kind: empty, repeat: $n}\n" for _ in range(30))
    path = _write(
        tmp_path / "s.yaml",
        f"name: s\ndescription: d\nsweep:\n  n: {{start: 1, stop: 10, num: 10000}}\nchain:\n{body}",
    )
    assert len(expand_scenario(path)) == 10


def test_a_json_error_on_a_one_line_file_says_where(tmp_path):
    from launchbench.errors import ResultsFileError
    from launchbench.results.store import load_run

    path = _write(tmp_path / "results.json", '{"tool": "launchbench", "schema_version": 1, "cases": [1, 2,')
    with pytest.raises(ResultsFileError) as info:
        load_run(path)
    message = str(info.value)
    assert "at line 1, column 61 (character 60)" in message
    assert "at at" not in message


@pytest.mark.parametrize("where", ["os.replace", "os.fsync"])
def test_a_write_that_fails_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, where):
    """A disk that fills while writing: exit 2, one line, the old file intact, no temporary file."""
    import errno as errno_module

    def full(*_args, **_kwargs):
        raise OSError(errno_module.ENOSPC, "No space left on device")

    run_a = ROOT / "tests" / "data" / "h200" / "quickstart-a"
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    monkeypatch.setattr(where, full)
    result = CliRunner().invoke(
        cli, ["compare", str(run_a), str(run_a), "--format", "csv", "-o", str(target)]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"launchbench: error: cannot write -o {target}: no space left on device"
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_run_directory_write_that_fails_is_an_input_error(tmp_path, monkeypatch):
    import errno as errno_module

    from launchbench.files import OutputError
    from launchbench.results.store import atomic_write_text

    def full(*_args, **_kwargs):
        raise OSError(errno_module.ENOSPC, "No space left on device")

    monkeypatch.setattr("os.fsync", full)
    with pytest.raises(OutputError, match="no space left on device"):
        atomic_write_text(tmp_path / "run" / "results.json", "{}")
    assert [p.name for p in (tmp_path / "run").iterdir()] == []
