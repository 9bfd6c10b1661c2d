"""Misuses that must end in one line and exit 2 (or one warning), each as a user meets it: ab's --cpu and
interpreters, run directories that cannot be made, an input that cannot be read, history rows and
databases that are not there, a sweep axis no step uses, control characters on their way to a terminal;
and a sweep of bad runs and scenarios written by hand, as someone else would write them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from launchbench.cli import cli
from launchbench.files import OutputError
from launchbench.results.store import create_run_dir, load_run, write_run

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "data" / "golden" / "results-v4.json"
QUICKSTART = str(ROOT / "scenarios" / "quickstart.yaml")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=True)


def one_line_exit_2(result: Result, *fragments: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    message = result.stderr
    assert message.count("\n") == 1 and message.startswith("launchbench: error: "), message
    for text in fragments:
        assert text in message, (text, message)
    return message


def launchbench(*args: str) -> subprocess.CompletedProcess[str]:
    """A real process: main()'s own handling (what CliRunner does not run) included; started outside the
    checkout, so the launchbench it runs is the one on its path."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)])),
    }
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "launchbench", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        cwd=tempfile.gettempdir(),
        env=env,
    )


# ---------------------------------------------------------------------------------------------- ab


def test_ab_cpu_outside_the_affinity_is_refused_before_any_worker(tmp_path: Path) -> None:
    beyond = max(os.sched_getaffinity(0)) + 1000
    for cpu in (str(beyond), "abc", "-1"):
        result = invoke("ab", QUICKSTART, "--cpu", cpu, "-d", str(tmp_path / "ab"))
        one_line_exit_2(result, f"--cpu {cpu}", str(min(os.sched_getaffinity(0))))
    assert not (tmp_path / "ab").exists()


@pytest.mark.parametrize("program", ["/bin/echo", "/usr/bin/perl", "/bin/true", "/bin/sh"])
def test_ab_interpreter_that_is_not_a_python_with_launchbench(
    program: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Checked before a worker starts: one line naming the interpreter, the program's output kept out
    of the terminal (this process's file descriptors 1 and 2, which the program would inherit), no run
    directory made."""
    if not Path(program).exists():
        pytest.skip(f"{program} is not on this machine")
    capfd.readouterr()
    result = invoke("ab", QUICKSTART, "--a", f"python={program}", "-d", str(tmp_path / "ab"))
    message = one_line_exit_2(result, f"python={program}: not a Python that can import")
    assert message.startswith(f"launchbench: error: python={program}: ") and result.stdout == ""
    assert capfd.readouterr() == ("", "")
    assert "GPU worker" not in message and not (tmp_path / "ab").exists()


def test_run_and_ab_errors_come_without_a_blank_line(tmp_path: Path) -> None:
    """Where nothing can be measured (no CuPy here, or no GPU), the error is the only output."""
    for args in (
        ["run", QUICKSTART, "-d", str(tmp_path / "r")],
        ["ab", QUICKSTART, "-d", str(tmp_path / "a")],
    ):
        proc = launchbench(*args)
        if proc.returncode != 2:
            pytest.skip("this machine can measure: the error path is not reached")
        assert proc.stdout == "", repr(proc.stdout)
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("launchbench: error: "), proc.stderr


# ---------------------------------------------------------------------------------- files and paths


def test_a_run_directory_that_cannot_be_made_names_itself() -> None:
    with pytest.raises(OutputError) as info:
        create_run_dir(Path("/proc/launchbench-no-such/run"))
    message = str(info.value)
    assert "/proc/launchbench-no-such/run" in message and "writing" in message


def test_an_input_that_cannot_be_read_is_not_called_an_output(tmp_path: Path) -> None:
    """A run directory holding only its journal (a run that crashed) given to history ingest: the error
    names the file that could not be read, not 'the output'."""
    from launchbench.results.store import RunJournal

    run = load_run(GOLDEN)
    journal = RunJournal(tmp_path / "crashed")
    (tmp_path / "crashed").mkdir()
    journal.start(run.model_copy(update={"cases": []}))
    for case in run.cases:
        for k in range(case.passes_done):
            modes = {n: m.model_copy(update={"passes": [m.passes[k]]}) for n, m in case.modes.items()}
            journal.append(case.model_copy(update={"passes_done": 1, "modes": modes}), k)
    journal.compact(run.model_copy(update={"cases": [], "status": "complete"}))
    (tmp_path / "crashed" / "results.json").unlink()
    proc = launchbench("history", "ingest", str(tmp_path / "crashed"), "--db", str(tmp_path / "h.sqlite"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "cannot write the output" not in proc.stderr
    assert proc.stderr.startswith(f"launchbench: error: {tmp_path / 'crashed'}"), proc.stderr
    assert "read" in proc.stderr


def test_compare_against_a_missing_history_makes_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("compare", "--baseline", "history", "--db", "missing.sqlite", str(GOLDEN))
    one_line_exit_2(result, "missing.sqlite: no such history database (reading")
    assert not (tmp_path / "missing.sqlite").exists()


def test_history_trend_of_a_row_no_run_measured(tmp_path: Path) -> None:
    db = str(tmp_path / "h.sqlite")
    write_run(tmp_path / "run", load_run(GOLDEN))
    assert invoke("history", "ingest", str(tmp_path / "run"), "--db", db).exit_code == 0
    one_line_exit_2(
        invoke("history", "trend", "nosuch/row", "--db", db), "no such row in the history", "nosuch/row"
    )
    one_line_exit_2(
        invoke("history", "trend", "three/empty/length=1", "--mode", "cache", "--db", db),
        "three/empty/length=1 [cache]",
        "it has the modes eager, graph",
    )
    known = invoke("history", "trend", "three/empty/length=1", "--db", db)
    assert known.exit_code == 0 and "1 runs" in known.output
    filtered = invoke("history", "trend", "three/empty/length=1", "--db", db, "--gpu", "no such GPU")
    assert filtered.exit_code == 0 and "0 runs" in filtered.output  # a filter that matches no run: an answer


# ---------------------------------------------------------------------------------------- scenarios

UNUSED_AXIS = """\
name: unused
description: a misspelt sweep axis
sweep:
  length: [1, 10]
  lenght: [2, 3]
chains:
  e:
    - {kind: empty, repeat: $length}
"""


def test_a_sweep_axis_no_step_uses_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "unused.yaml"
    path.write_text(UNUSED_AXIS)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 0
    warning = f"launchbench: warning: {path}:5 at 'sweep.lenght': no step uses the sweep axis 'lenght'"
    assert result.stderr.startswith(warning) and result.stderr.count("\n") == 1, result.stderr
    run = CliRunner().invoke(cli, ["run", str(path), "-d", str(tmp_path / "r")])
    assert run.stderr.startswith(warning), run.stderr
    clean = CliRunner().invoke(cli, ["validate", QUICKSTART])
    assert clean.exit_code == 0 and clean.stderr == ""


# ----------------------------------------------------------------------------------- terminal text


def test_control_characters_are_escaped_on_their_way_out() -> None:
    from launchbench.printable import visible

    assert visible("empty/\u202elength=1\nx\x1b[31m") == "empty/\\u202elength=1\\nx\\x1b[31m"
    assert visible("quickstart/empty/length=10 [graph] µs") == "quickstart/empty/length=10 [graph] µs"
    from launchbench.report.markdown import _cell

    assert _cell("a|b\u202e") == "a\\|b\\u202e"


# ------------------------------------------------------------------------ a sweep of hand-written runs


def _hand_run(**changes: object) -> dict:
    """A run written by hand, as another tool or a person would: the fields launchbench writes, one case
    of one mode in two passes of three samples."""
    samples = {"wall_s_per_iter": [6.5e-6, 6.4e-6, 6.6e-6], "latency_s": [1.1e-5, 1.2e-5, 1.1e-5]}
    case = {
        "scenario": "hand",
        "case_id": "empty/length=1",
        "chain": "empty",
        "kinds": "empty",
        "launches_per_iter": 1,
        "passes_done": 2,
        "modes": {
            "eager": {
                "mode": "eager",
                "status": "ok",
                "passes": [{"iters_per_sample": 100, "samples": samples} for _ in range(2)],
            }
        },
    }
    run = {
        "schema_version": 4,
        "tool": "launchbench",
        "launchbench_version": "0.1.0",
        "status": "complete",
        "started": "2026-12-01T10:00:00+00:00",
        "finished": "2026-12-01T10:01:00+00:00",
        "environment": {"gpu": {"name": "NVIDIA H200"}},
        "scenarios": [{"name": "hand", "description": "by hand", "file": "hand.yaml", "sha256": "0" * 64}],
        "cases": [case],
    }
    for path, value in changes.items():
        *parents, last = path.split("/")
        node: dict = run
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return run


DELETE = object()
MODE = "cases/0/modes/eager"
HAND_RUNS: dict[str, tuple[dict, str]] = {
    "gpu-as-list": (_hand_run(**{"environment/gpu": ["NVIDIA H200"]}), "environment.gpu"),
    "hostname-number": (_hand_run(**{"environment/host": {"hostname": 7}}), "environment.host.hostname"),
    "settings-ab-list": (_hand_run(**{"settings": {"ab": ["A"]}}), "settings.ab"),
    "ok-without-passes": (_hand_run(**{f"{MODE}/passes": []}), "cases[0].modes.eager.passes"),
    "ok-one-pass-of-two": (
        _hand_run(**{f"{MODE}/passes": [{"iters_per_sample": 100, "samples": {"wall_s_per_iter": [1e-5]}}]}),
        "holds 1 passes; the case ran 2",
    ),
    "pass-with-no-samples": (
        _hand_run(**{f"{MODE}/passes": [{"iters_per_sample": 1, "samples": {}}] * 2}),
        "holds no samples",
    ),
    "zero-point-zero-zero-one-attosecond": (
        _hand_run(**{f"{MODE}/passes/0/samples": {"wall_s_per_iter": [1e-21] * 3}}),
        "must be 0 or at least 1e-12 s",
    ),
    "a-day-per-iteration": (
        _hand_run(**{f"{MODE}/passes/1/samples": {"wall_s_per_iter": [86400.0] * 3}}),
        "must be at most 10000 s per iteration",
    ),
    "iters-huge": (_hand_run(**{f"{MODE}/passes/0/iters_per_sample": 2**70}), "must be <= 2^53"),
    "case-id-tab": (_hand_run(**{"cases/0/case_id": "empty\tlength=1"}), "U+0009"),
    "chain-rtl-mark": (_hand_run(**{"cases/0/chain": "em\u200fpty"}), "U+200F"),
    "scenario-line-separator": (_hand_run(**{"cases/0/scenario": "ha\u2028nd"}), "U+2028"),
    "no-cases": (_hand_run(cases=[]), "cases: no cases"),
    "no-environment-gpu-name": (
        _hand_run(**{"environment/gpu": {"name": {"model": "H200"}}}),
        "environment.gpu.name",
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_RUNS))
def test_hand_written_bad_runs_are_refused_everywhere(name: str, tmp_path: Path) -> None:
    data, fragment = HAND_RUNS[name]
    good = tmp_path / "good"
    good.mkdir()
    (good / "results.json").write_text(json.dumps(_hand_run()))
    assert invoke("compare", str(good), str(good)).exit_code == 0  # the hand-written run itself is good
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(data))
    out = tmp_path / "out"
    out.mkdir()
    commands = [
        ["compare", str(good), str(run), "--fail-on", "wall_us_per_launch:5%"],
        ["compare", str(run), str(good), "-o", str(out / "c.md")],
        ["check", str(run)],
        ["plot", str(run), "-d", str(out / "plots")],
        ["history", "ingest", str(run), "--db", str(out / "h.sqlite")],
    ]
    for args in commands:
        one_line_exit_2(invoke(*args), str(run / "results.json"), fragment)
    assert not any(out.iterdir())


HAND_SCENARIOS = {
    "tab-in-name": ("name: 'a\\tb'\ndescription: x\nchains:\n  e: [{kind: empty}]\n", "name"),
    "repeat-as-text": ("name: a\ndescription: x\nchains:\n  e: [{kind: empty, repeat: ten}]\n", "repeat"),
    "sweep-of-nothing": (
        "name: a\ndescription: x\nsweep:\n  n: []\nchains:\n  e: [{kind: empty}]\n",
        "sweep",
    ),
    "passes-zero": (
        "name: a\ndescription: x\nmeasure: {passes: 0}\nchains:\n  e: [{kind: empty}]\n",
        "passes",
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_SCENARIOS))
def test_hand_written_bad_scenarios_are_refused_before_anything_runs(name: str, tmp_path: Path) -> None:
    text, key = HAND_SCENARIOS[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    for args in (["validate", str(path)], ["run", str(path), "-d", str(tmp_path / "r")]):
        one_line_exit_2(invoke(*args), str(path), key)
    assert not (tmp_path / "r").exists()
