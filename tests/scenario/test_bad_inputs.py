"""Bad scenario files: every file under tests/data/bad/ gives one clear message that names the file (and
the line and key where there is one), exit code 2, and no traceback unless `launchbench --debug`.

This module sweeps them all: through the library (the ScenarioError and its whole recorded message),
through `launchbench validate` (every file) and through run, check --scenario and graph (every third or
fourth file), those commands in one worker process once per test session (tests/sweep_worker.py: CliRunner,
10 s of CPU time and 1 GiB of address space per command, nothing left behind), a handful through a real
subprocess. tests/data/bad/EXPECTED.md says what is wrong with each file. Results files
(tests/data/bad/results/) are swept by tests/results/test_bad_results.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sweep_worker import sweep_once

from launchbench.analysis.expectations import load_checked
from launchbench.cli import cli
from launchbench.errors import ScenarioError
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.load import MAX_FILE_BYTES, load_scenario_file
from launchbench.scenario.model import STEP_KINDS

ROOT = Path(__file__).resolve().parents[2]
BAD = Path(__file__).parents[1] / "data" / "bad"
PWNED = Path("/tmp/launchbench-pwned")  # what python-object-apply.yaml would create if its tag ran
TAG_EFFECTS = {"python-object-apply.yaml": PWNED, "python-object-new.yaml": Path("/tmp/launchbench-pwned-2")}

# Scenario file → (line the error is reported at, or None where the file has none; substrings of the message).
SCENARIOS: dict[str, tuple[int | None, tuple[str, ...]]] = {
    # not a scenario at all
    "empty.yaml": (None, ("file is empty",)),
    "only-comments.yaml": (None, ("file is empty",)),
    "not-yaml.yaml": (3, ("not valid YAML", "expected ',' or ']'")),
    "tab-indent.yaml": (4, ("not valid YAML", "'\\t'")),
    "top-level-list.yaml": (1, ("must be a YAML mapping", "not a list")),
    "top-level-scalar.yaml": (1, ("must be a YAML mapping", "single value")),
    "multi-document.yaml": (6, ("not valid YAML", "single document")),
    "binary-garbage.yaml": (2, ("not UTF-8 text", "binary")),
    "latin1.yaml": (2, ("not UTF-8 text",)),
    "utf16.yaml": (1, ("not UTF-8 text", "byte 0")),
    "control-chars.yaml": (2, ("not valid YAML", "control character 0x07")),
    # keys
    "unknown-top-key.yaml": (3, ("unknown key 'chians'", "did you mean 'chains'?")),
    "unknown-step-key.yaml": (6, ("chains.a[0].sise", "unknown key 'sise'", "did you mean 'size'?")),
    "unknown-measure-key.yaml": (4, ("unknown key 'target_nosie'", "did you mean 'target_noise'?")),
    "unknown-expect-key.yaml": (8, ("expect[0].metrc", "did you mean 'metric'?")),
    "unknown-sweep-range-key.yaml": (7, ("sweep.n.nmu", "did you mean 'num'?")),
    "unknown-buffer-key.yaml": (12, ("buffers.x.sise", "did you mean 'size'?")),
    "unknown-defaults-key.yaml": (4, ("defaults.dtpye", "did you mean 'dtype'?")),
    "kind-in-defaults.yaml": (4, ("defaults.kind", "defaults cannot set 'kind'")),
    "unknown-step-kind.yaml": (
        6,
        ("chains.a[1].kind", "unknown step kind 'reduce'", "did you mean 'all_reduce'?"),
    ),
    "step-kind-not-string.yaml": (5, ("chains.a[0].kind", "kind must be one of")),
    "step-without-kind.yaml": (5, ("chains.a[0]", "a step needs a 'kind'")),
    "step-not-mapping.yaml": (6, ("chains.a[1]", "a step must be a mapping")),
    "chain-not-list.yaml": (4, ("chains.a", "a chain must be a list of steps")),
    "chains-empty.yaml": (3, ("no chains",)),
    "chain-no-steps.yaml": (6, ("chains.b", "chain 'b' has no steps")),
    "single-chain-no-steps.yaml": (3, ("'chain'", "the chain has no steps")),
    "chain-and-chains.yaml": (3, ("either 'chain'", "not both")),
    "chains-missing.yaml": (1, ("missing required key 'chains'",)),
    "description-missing.yaml": (1, ("missing required key 'description'",)),
    "bad-name.yaml": (1, ("'name'", "letters, digits")),
    "chain-name-slash.yaml": (4, ("chain name 'a/b'", "no '/'")),
    "duplicate-key.yaml": (6, ("duplicate key 'name'",)),
    "duplicate-step-key.yaml": (7, ("chains.a[0].size", "duplicate key 'size'")),
    "unhashable-key.yaml": (4, ("a key must be a plain value",)),
    "int-key.yaml": (6, ("chains.a[0][1]", "a key must be text, not 1")),
    "newline-in-key.yaml": (6, ("unknown key 're\\npeat'", "did you mean 'repeat'?")),  # escaped: one line
    "chain-name-control-char.yaml": (4, ("chain name 'a\\tb'", "printable")),
    "param-name-not-identifier.yaml": (4, ("params.my size", "plain name")),
    # types and values
    "string-size.yaml": (6, ("chains.a[0].size", "expected a number", "'big'")),
    "quoted-number.yaml": (6, ("chains.a[0].bytes", "expected a number", "without quotes")),
    "bool-repeat.yaml": (6, ("chains.a[0].repeat", "not the boolean true")),
    "bool-size.yaml": (
        6,
        ("chains.a[0].size", "not the string 'yes'", "YAML 1.2 reads yes/no/on/off as text"),
    ),
    "float-size.yaml": (6, ("chains.a[0].size", "whole number", "1.5")),
    "zero-size.yaml": (6, ("chains.a[0].size", "greater than or equal to 1", "got 0")),
    "negative-repeat.yaml": (6, ("chains.a[0].repeat", "greater than or equal to 1", "got -3")),
    "absurd-size.yaml": (6, ("chains.a[0].size", "less than or equal to 17179869184")),
    "absurd-repeat.yaml": (6, ("chains.a[0].repeat", "less than or equal to 100000")),
    "absurd-memset.yaml": (7, ("chains.a[0].value", "less than or equal to 255", "got 256")),
    "huge-number.yaml": (6, ("chains.a[0].bytes", "finite number", "got inf")),
    "huge-int-literal.yaml": (6, ("not valid YAML", "4300 digits")),
    "nan-alpha.yaml": (7, ("chains.a[0].alpha", "finite number", "got nan")),
    "inf-measure.yaml": (4, ("measure.max_time", "finite number")),
    "negative-measure.yaml": (4, ("measure.max_time", "greater than 0")),
    "bad-dtype.yaml": (7, ("chains.a[0].dtype", "'float32'", "got 'float8'")),
    "bad-timestamp.yaml": (2, ("YAML tag '!!timestamp' is not allowed",)),
    "bad-int-tag.yaml": (6, ("cannot read the value 'four'",)),
    "max-cases-zero.yaml": (3, ("max_cases", "greater than or equal to 1")),
    "expect-no-bound.yaml": (7, ("expect[0]", "needs max or min")),
    "param-bool.yaml": (4, ("params.n", "not the boolean true")),
    "defaults-bad-value.yaml": (4, ("dtype", "got 'float8'", "set in defaults")),
    # sweeps and parameters
    "sweep-millions.yaml": (3, ("106,457,547 cases", "limit of 1,000", "--max-cases")),
    "sweep-over-limit.yaml": (3, ("1,200 cases", "limit of 1,000", "--max-cases")),
    "sweep-negative.yaml": (8, ("chains.a[0].size", "greater than or equal to 1", "case 'a/size=-1'")),
    "sweep-log-zero.yaml": (4, ("sweep.size", "log-scaled range needs start and stop above 0")),
    "sweep-empty-axis.yaml": (4, ("sweep.size", "has no values")),
    "sweep-not-list.yaml": (4, ("sweep.size", "list of numbers or a range")),
    "sweep-bool-values.yaml": (4, ("sweep.n[0]", "not the boolean true")),
    "sweep-string-values.yaml": (4, ("sweep.n[1]", "'two'")),
    "sweep-nan.yaml": (4, ("sweep.n[1]", "finite number")),
    "sweep-range-inf.yaml": (4, ("sweep.n.stop", "finite number")),
    "sweep-range-overflow.yaml": (4, ("sweep.n.start", "greater than or equal to")),
    "sweep-overrides-string-param.yaml": (6, ("sweep.dt", "non-numeric parameter")),
    "unknown-param.yaml": (
        8,
        ("chains.a[0].repeat", "unknown parameter '$lenght'", "did you mean '$length'?"),
    ),
    "unknown-param-single-chain.yaml": (6, ("chain[1].size", "unknown parameter '$size'")),
    "string-param-as-number.yaml": (8, ("chains.a[0].repeat", "not the string '100'")),
    "reference-outside-steps.yaml": (6, ("measure.max_time", "$name references work only in chain steps")),
    "expression-too-large.yaml": (6, ("chains.a[0].repeat", "exceeds")),
    # raw kernels (a kernel that does not compile needs a GPU: tests/backend/test_gpu.py)
    "raw-undeclared-buffer.yaml": (12, ("chains.a[0].args", "buffer 'y'", "not declared")),
    "raw-block-too-big.yaml": (9, ("chains.a[0].block", "2048 threads", "at most 1024")),
    "raw-grid-zero.yaml": (8, ("chains.a[0].grid", "positive integers")),
    "raw-grid-4d.yaml": (8, ("chains.a[0].grid", "1 to 3")),
    "raw-dims-too-big.yaml": (8, ("chains.a[0].grid", "dimension y is 70000", "at most 65535")),
    "raw-scalar-bool.yaml": (11, ("chains.a[0].args[0].scalar", "not the boolean true")),
    "empty-block-too-big.yaml": (7, ("chains.a[0].block", "less than or equal to 1024")),
    # YAML 1.1 forms, read by YAML 1.2 rules (issue 13, class 7)
    "yaml11-sexagesimal.yaml": (6, ("chains.a[0].repeat", "not the string '1:30'", "base-60")),
    "yaml11-underscore.yaml": (6, ("chains.a[0].bytes", "'1_000'", "without '_'")),
    "yaml11-binary.yaml": (7, ("chains.a[0].value", "'0b101'", "0o octal or 0x hexadecimal")),
    "yaml11-bool-flag.yaml": (4, ("sweep.n.integer", "expected true or false, not 'yes'", "YAML 1.2")),
    # cross-field rules (issue 13, class 5)
    "expect-max-below-min.yaml": (
        9,
        (
            "expect[0].max",
            "max (2) is below min (5)",
        ),
    ),
    "measure-min-above-max.yaml": (5, ("measure.max_samples", "below min_samples (500)")),
    "expect-metric-typo.yaml": (
        8,
        ("expect[0].metric", "unknown metric 'wall_us_per_lanch'", "did you mean 'wall_us_per_launch'?"),
    ),
    "expect-metric-text.yaml": (7, ("expect[0].metric", "'status' is a text column")),
    "expect-case-no-match.yaml": (10, ("expect[0].case", "matches no case", "did you mean 'empty/n=1'?")),
    "expect-mode-unknown.yaml": (8, ("expect[0].mode", "'update' or 'torch_graph'", "'both'")),
    # shape-changing chains (issue 16)
    "shapes-duplicate.yaml": (8, ("shapes.values", "64 is listed twice", "each shape must be distinct")),
    "shapes-one-value.yaml": (8, ("shapes.values", "at least two shapes (got 1)")),
    "shapes-empty.yaml": (8, ("shapes.values", "at least two shapes (got 0)")),
    "shapes-range-repeats.yaml": (8, ("shapes.values", "4 distinct values for num: 8")),
    "shapes-too-big.yaml": (8, ("shapes.values", "152.6 GiB", "5 shapes", "batch=5000000", "128 GiB")),
    "shapes-unknown-key.yaml": (10, ("shapes.cache_limt", "did you mean 'cache_limit'")),
    "shapes-per-shape-zero.yaml": (9, ("shapes.per_shape", "greater than or equal to 1", "got 0")),
    "shapes-strategy-typo.yaml": (
        10,
        ("shapes.strategies[1]", "'recapture', 'cache' or 'update'", "'updte'"),
    ),
    "shapes-update-topology.yaml": (
        5,
        ("chains.a[0]", "layers=2", "layers=4", "cudaGraphExecUpdate", "without 'update'"),
    ),
    "shapes-param-unused.yaml": (7, ("shapes.param", "no chain uses $batch")),
    "shapes-param-in-sweep.yaml": (4, ("sweep.batch", "both the shape parameter and in sweep")),
    # what expansion would cost (issue 13, class 1)
    "launches-too-many.yaml": (4, ("chains.a", "1,100,000 launches", "limit of 1,000,000")),
    # YAML features turned against the loader
    "python-object-apply.yaml": (
        6,
        ("YAML tag '!!python/object/apply:os.system' is not allowed", "never run"),
    ),
    "python-name.yaml": (6, ("YAML tag '!!python/name:os.system' is not allowed",)),
    "python-object-new.yaml": (1, ("YAML tag '!!python/object/new:subprocess.Popen' is not allowed",)),
    "unknown-tag.yaml": (3, ("YAML tag '!include' is not allowed",)),
    "bad-merge-key.yaml": (3, ("not valid YAML", "merging")),
    "undefined-alias.yaml": (5, ("not valid YAML", "undefined alias 'step'")),
    "billion-laughs.yaml": (7, ("aliases expand the document to more than 100,000 values",)),
    "billion-laughs-defaults.yaml": (7, ("aliases expand the document to more than 100,000 values",)),
    "recursive-alias.yaml": (4, ("alias refers to the list or mapping that holds it",)),
    "deep-nesting.yaml": (6, ("nested more than 40 levels deep",)),
    "deep-nesting-moderate.yaml": (6, ("nested more than 40 levels deep",)),
    "directory.yaml": (None, ("is a directory",)),
}

# File → its whole message, with <file> for its path and <kinds> for the step kinds (adding a kind keeps it).
MESSAGES = dict(
    line.split("\t", 1)
    for line in (BAD.parent / "bad-scenario-messages.tsv").read_text(encoding="utf-8").splitlines()
)

CLICK_REFUSES = {"directory.yaml"}  # click's Path(dir_okay=False) answers first, with its own exit 2 message


def _validate(*args: str):
    return CliRunner().invoke(cli, [*args], catch_exceptions=True)


# sweep id → (argv with {tmp} and {a} placeholders, paths that must not exist after)
OTHER_COMMANDS: dict[str, tuple[list[str], list[str]]] = {}
for _name in sorted(SCENARIOS)[::3]:
    OTHER_COMMANDS[f"run:{_name}"] = (
        ["run", "--no-isolate", "--out", "{tmp}/runs/" + _name, str(BAD / _name)],
        ["{tmp}/runs/" + _name],
    )
for _name in sorted(SCENARIOS)[::4]:
    OTHER_COMMANDS[f"check-scenario:{_name}"] = (["check", "{a}", "--scenario", str(BAD / _name)], [])
    OTHER_COMMANDS[f"graph:{_name}"] = (
        ["graph", str(BAD / _name), "--out", "{tmp}/graph-" + _name + ".dot"],
        ["{tmp}/graph-" + _name + ".dot"],
    )
RUN_A = ROOT / "tests" / "data" / "h200" / "quickstart-a"


def _fill(text: str, tmp: Path) -> str:
    return text.format(tmp=tmp, a=RUN_A)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Every bad file through validate, and the OTHER_COMMANDS, in one worker process."""

    def prepare(tmp: Path) -> dict[str, list[str]]:
        (tmp / "runs").mkdir()
        for effect in TAG_EFFECTS.values():
            effect.unlink(missing_ok=True)
        commands = {f"validate:{name}": ["validate", str(BAD / name)] for name in SCENARIOS}
        commands.update({k: [_fill(a, tmp) for a in argv] for k, (argv, _) in OTHER_COMMANDS.items()})
        return commands

    return sweep_once(tmp_path_factory, "bad-scenarios", prepare)


def _assert_clean(result: dict[str, Any], tmp: Path) -> None:
    """What every refused command in the sweep shows: no crash, no traceback, exit 2, a last line that
    says why, no temporary file left."""
    assert result["crash"] is None, result["crash"]
    assert "Traceback" not in result["stdout"] + result["stderr"]
    assert result["code"] == 2, (result["stdout"][-800:], result["stderr"][-800:])
    lines = result["stderr"].strip().splitlines()
    assert lines, "an input error says why"
    assert lines[-1].startswith(("launchbench: error:", "Error:")), lines[-1]
    leftovers = [p.name for p in tmp.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


def test_every_bad_file_is_tested_and_documented():
    names = {p.name for p in BAD.iterdir()} - {
        "EXPECTED.md",
        "results",
    }  # results/: tests/results/test_bad_results.py
    assert names == set(SCENARIOS) == set(MESSAGES)
    assert len(names) >= 45
    index = (BAD / "EXPECTED.md").read_text()
    for name in names:
        assert f"`{name}`" in index, f"{name} is not described in EXPECTED.md"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_bad_scenario_is_refused_by_validate(sweep, name):
    tmp, results = sweep
    path = BAD / name
    line, expected = SCENARIOS[name]
    effect = TAG_EFFECTS.get(name)
    assert effect is None or not effect.exists(), f"the YAML tag in {name} was executed"
    result = results[f"validate:{name}"]
    _assert_clean(result, tmp)
    assert result["stdout"] == ""
    message = result["stderr"].strip()
    assert str(path) in message
    for text in expected:
        assert text in message, f"{text!r} not in {message!r}"
    if name in CLICK_REFUSES:
        return
    assert len(message.splitlines()) == 1, message
    assert message.startswith(f"launchbench: error: {path}")
    if line is None:
        assert message.startswith(f"launchbench: error: {path}: "), message
    else:
        assert message.startswith(f"launchbench: error: {path}:{line}"), message


@pytest.mark.parametrize("name", sorted(OTHER_COMMANDS))
def test_bad_scenario_is_refused_by_other_commands(sweep, name):
    tmp, results = sweep
    _assert_clean(results[name], tmp)
    for path in OTHER_COMMANDS[name][1]:
        assert not Path(_fill(path, tmp)).exists(), f"{path} left behind"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_bad_scenario_raises_scenario_error(name):
    """The library says the same as the CLI: a ScenarioError with the file and the line as attributes,
    and the whole message as recorded."""
    path = BAD / name
    line, expected = SCENARIOS[name]
    with pytest.raises(ScenarioError) as info:
        load_checked(str(path))  # the rules that need the case ids but not the steps: expectations, sizes
        expand_scenario(path)
    err = info.value
    assert err.file == str(path)
    assert err.line == line
    for text in expected:
        assert text in str(err)
    recorded = MESSAGES[name].replace("<file>", str(path)).replace("<kinds>", ", ".join(STEP_KINDS))
    assert str(err) == recorded


def test_missing_scenario_file(tmp_path):
    path = tmp_path / "nowhere.yaml"
    result = _validate("validate", str(path))
    assert result.exit_code == 2
    assert result.stderr.strip() == f"launchbench: error: {path}: no such file"


def test_directory_is_refused_by_the_loader_too():
    with pytest.raises(ScenarioError, match="is a directory"):
        load_scenario_file(BAD / "directory.yaml")


def test_huge_file_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("name: big\ndescription: padding\n# " + "x" * MAX_FILE_BYTES + "\n")
    with pytest.raises(ScenarioError, match="larger than 4 MiB"):
        load_scenario_file(path)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_endless_device_is_refused():
    with pytest.raises(ScenarioError, match="is a character device, not a regular file"):
        load_scenario_file("/dev/zero")


def test_python_tag_is_refused_and_never_run():
    PWNED.unlink(missing_ok=True)
    path = BAD / "python-object-apply.yaml"
    assert "!!python/object/apply:os.system" in path.read_text()
    result = _validate("validate", str(path))
    assert result.exit_code == 2
    assert "is not allowed" in result.stderr
    proc = _subprocess("validate", str(path))
    assert proc.returncode == 2
    assert "is not allowed" in proc.stderr
    assert not PWNED.exists(), "the YAML tag was executed"


def test_too_many_cases_pass_with_max_cases():
    path = BAD / "sweep-over-limit.yaml"
    assert _validate("validate", str(path)).exit_code == 2
    result = _validate("validate", "--max-cases", "2000", str(path))
    assert result.exit_code == 0, result.output
    assert "1200 cases" in result.stdout
    assert _validate("validate", "--max-cases", "1000", str(path)).exit_code == 2


def test_millions_of_cases_are_refused_quickly_even_with_a_large_max_cases():
    result = _validate("validate", "--max-cases", "1000000", str(BAD / "sweep-millions.yaml"))
    assert result.exit_code == 2
    assert "106,457,547 cases" in result.stderr and "limit of 1,000,000" in result.stderr


def test_first_bad_file_stops_validate_with_exit_2():
    good = ROOT / "scenarios" / "quickstart.yaml"
    result = _validate("validate", str(good), str(BAD / "unknown-top-key.yaml"))
    assert result.exit_code == 2
    assert f"{good}: ok" in result.stdout
    assert "unknown key 'chians'" in result.stderr


# --- a real process: what a user sees ----------------------------------------------------------------


def _subprocess(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-m", "launchbench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )


@pytest.mark.parametrize(
    "name",
    ["binary-garbage.yaml", "unknown-top-key.yaml", "billion-laughs.yaml", "deep-nesting.yaml"],
)
def test_bad_scenario_in_a_real_process(name):
    path = BAD / name
    proc = _subprocess("validate", str(path))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith(f"launchbench: error: {path}")
    for text in SCENARIOS[name][1]:
        assert text in proc.stderr


def test_missing_file_in_a_real_process(tmp_path):
    proc = _subprocess("validate", str(tmp_path / "nowhere.yaml"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{tmp_path / 'nowhere.yaml'}: no such file" in proc.stderr


def test_directory_in_a_real_process():
    proc = _subprocess("validate", str(BAD / "directory.yaml"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert str(BAD / "directory.yaml") in proc.stderr


def test_debug_shows_the_traceback():
    path = BAD / "unknown-step-kind.yaml"
    proc = _subprocess("--debug", "validate", str(path))
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr
    assert "ScenarioError" in proc.stderr
    assert f"launchbench: error: {path}:6" in proc.stderr
    result = CliRunner().invoke(cli, ["--debug", "validate", str(path)])
    assert result.exit_code == 2
    assert "Traceback" in result.stderr
