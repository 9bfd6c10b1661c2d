"""Bad results files: every file under tests/data/bad/results/ (with the message fragments it must give in
NAME.expected beside it), and the special files a test makes (a FIFO, /dev/zero, a symbolic link loop, a
file over the size cap), is refused by every command that reads results (compare, as either side and with
a gate, check, plot, history ingest; run --resume for a bad run directory): exit 2, one line naming the file
and the JSON path, no traceback, nothing written (no history database made).

This module sweeps the files under tests/data/bad/results/: the commands run in one worker process once per
test session (tests/sweep_worker.py: CliRunner, 10 s of CPU time and 1 GiB of address space per command)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sweep_worker import sweep_once

from launchbench.cli import cli
from launchbench.errors import ResultsFileError
from launchbench.results.store import MAX_RESULTS_BYTES, load_run

ROOT = Path(__file__).resolve().parents[2]
BAD = Path(__file__).parents[1] / "data" / "bad" / "results"
GOOD = Path(__file__).parents[1] / "data" / "golden" / "results-v2.json"
RUN_A = ROOT / "tests" / "data" / "h200" / "quickstart-a"
CASES = sorted(p.name for p in BAD.iterdir() if not p.name.endswith(".expected") and p.name != "README.md")


def expected(name: str) -> list[str]:
    return [line for line in (BAD / f"{name}.expected").read_text().splitlines() if line]


def _fifo(tmp: Path) -> Path:
    path = tmp / "results.json"
    os.mkfifo(path)
    return path


def _dev_zero_link(tmp: Path) -> Path:
    path = tmp / "results.json"
    path.symlink_to("/dev/zero")
    return path


def _loop(tmp: Path) -> Path:
    path = tmp / "loop.json"
    path.symlink_to(tmp / "loop.json")
    return path


def _huge(tmp: Path) -> Path:
    path = tmp / "results.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_RESULTS_BYTES + 1)  # sparse: nothing is written, and nothing must be read
    return path


def _directory(tmp: Path) -> Path:
    path = tmp / "results.json"
    path.mkdir()
    return path


def _empty_dir(tmp: Path) -> Path:
    return tmp


SPECIAL: dict[str, tuple[Callable[[Path], Path], tuple[str, ...]]] = {
    "fifo": (_fifo, ("is a FIFO (named pipe), not a regular file",)),
    "dev-zero-link": (_dev_zero_link, ("is a character device, not a regular file",)),
    "symlink-loop": (_loop, ("symlink loop",)),
    "over-the-cap": (_huge, ("file is larger than 512 MiB",)),
    "directory-named-results-json": (_directory, ("no results.json in this directory",)),
    "empty-directory": (_empty_dir, ("no results.json in this directory",)),
}
if Path("/dev/zero").exists():
    SPECIAL["dev-zero"] = (
        lambda tmp: Path("/dev/zero"),
        ("/dev/zero: is a character device, not a regular file",),
    )


def test_every_bad_results_file_has_its_expected_message():
    names = {p.name for p in BAD.iterdir()}
    for name in CASES:
        assert f"{name}.expected" in names, f"{name} has no {name}.expected"
        assert expected(name), f"{name}.expected is empty"
    assert {n.removesuffix(".expected") for n in names if n.endswith(".expected")} == set(CASES)
    assert len(CASES) >= 40


def _commands(path: Path, out: Path) -> dict[str, list[str]]:
    return {
        "compare": ["compare", str(GOOD), str(path), "-o", str(out / "compare.md"), "--format", "markdown"],
        "check": ["check", str(path), "-o", str(out / "check.txt")],
        "plot": ["plot", str(path), "--out", str(out / "plots")],
    }


def _sweep_commands(path: Path, out: Path) -> dict[str, list[str]]:
    """The commands the sweep runs on a bad file: those above, and compare with it as the baseline
    and with a gate."""
    return {
        **_commands(path, out),
        "compare-baseline": ["compare", str(path), str(RUN_A), "-o", str(out / "compare.md")],
        "compare-gate": ["compare", str(RUN_A), str(path), "--fail-on", "wall_us_per_launch:5%"],
    }


SWEPT = ["compare", "compare-baseline", "compare-gate", "check", "plot", "history-ingest"]


def _ingest_paths(ingest: Path, name: str) -> tuple[Path, Path]:
    """The run directory history ingest is given for a bad file (ingest/run with the bad file as its
    results.json, a bad run directory as it is), and the path its message names."""
    source = BAD / name
    return (source, source) if source.is_dir() else (ingest / "run", ingest / "run" / "results.json")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    """Every bad file through every command of SWEPT, in one worker process; out/COMMAND/NAME/ is each
    command's output folder (left empty), ingest/NAME/ holds history ingest's run and database."""

    def prepare(tmp: Path) -> dict[str, list[str]]:
        commands: dict[str, list[str]] = {}
        for name in CASES:
            for command, argv in _sweep_commands(BAD / name, tmp / "out" / "{command}" / name).items():
                out = tmp / "out" / command / name
                out.mkdir(parents=True)
                commands[f"{command}:{name}"] = [a.replace("{command}", command) for a in argv]
            ingest = tmp / "ingest" / name
            ingest.mkdir(parents=True)
            run, shown = _ingest_paths(ingest, name)
            if run != shown:
                run.mkdir()
                shown.write_bytes((BAD / name).read_bytes())
            commands[f"history-ingest:{name}"] = [
                "history",
                "ingest",
                str(run),
                "--db",
                str(ingest / "h.sqlite"),
            ]
        commands["run-resume"] = ["run", "--resume", str(BAD / "dir-csv-only")]
        return commands

    return sweep_once(tmp_path_factory, "bad-results", prepare)


def _assert_refused(result: dict[str, Any], path: Path, fragments: tuple[str, ...] | list[str]) -> None:
    assert result["code"] == 2, (result["stdout"][-800:], result["stderr"][-800:])
    assert result["crash"] is None, result["crash"]
    message = result["stderr"].strip()
    assert "Traceback" not in result["stdout"] + result["stderr"]
    assert len(message.splitlines()) == 1, message
    assert message.startswith(f"launchbench: error: {path}"), message
    for text in fragments:
        assert text in message, f"{text!r} not in {message!r}"


@pytest.mark.parametrize("command", SWEPT)
@pytest.mark.parametrize("name", CASES)
def test_bad_results_file_is_refused_by_every_command(sweep, name, command):
    """history ingest takes run directories: the bad file as a run directory's results.json (a bad run
    directory as it is); refused before the database is opened, so none is made."""
    tmp, results = sweep
    if command == "history-ingest":
        ingest = tmp / "ingest" / name
        _, shown = _ingest_paths(ingest, name)
        _assert_refused(results[f"{command}:{name}"], shown, expected(name))
        assert not (ingest / "h.sqlite").exists()
        return
    _assert_refused(results[f"{command}:{name}"], BAD / name, expected(name))
    out = tmp / "out" / command / name
    assert not any(out.iterdir()), "a refused command wrote a file"
    assert not [p.name for p in tmp.iterdir() if p.name.endswith(".tmp")]


def test_a_bad_run_directory_is_refused_by_run_resume(sweep):
    tmp, results = sweep
    result = results["run-resume"]
    assert result["crash"] is None and "Traceback" not in result["stdout"] + result["stderr"]
    assert result["code"] == 2, result["stderr"]
    assert result["stderr"].strip().splitlines()[-1].startswith(("launchbench: error:", "Error:"))


def _refused_in_process(args: list[str], path: Path, fragments: tuple[str, ...], out: Path) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    crash = result.exception if not isinstance(result.exception, SystemExit) else None
    swept = {"code": result.exit_code, "crash": repr(crash) if crash else None}
    _assert_refused({**swept, "stdout": result.stdout, "stderr": result.stderr}, path, fragments)
    assert not any(out.iterdir()), "a refused command wrote a file"


@pytest.mark.parametrize("command", ["compare", "check", "plot"])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_file_is_refused_without_reading_it(name, command, tmp_path):
    make, fragments = SPECIAL[name]
    (tmp_path / "run").mkdir()
    path = make(tmp_path / "run")
    out = tmp_path / "out"
    out.mkdir()
    _refused_in_process(_commands(path, out)[command], path, fragments, out)


@pytest.mark.parametrize("name", ["fifo", "dev-zero-link", "over-the-cap"])
def test_special_file_in_a_real_process(name, tmp_path):
    """A real process: a FIFO with no writer must not block, /dev/zero must not be read (the timeout
    and the memory limit would end the process first)."""
    path = SPECIAL[name][0](tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    limit = "import resource; resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30)); "
    code = limit + "from launchbench.cli import main; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    for text in SPECIAL[name][1]:
        assert text in proc.stderr


def test_the_library_raises_results_file_error_naming_the_file():
    for name in CASES:
        with pytest.raises(ResultsFileError) as info:
            load_run(BAD / name)
        assert str(info.value).startswith(str(BAD / name)), str(info.value)
        assert "\n" not in str(info.value)


def test_missing_results_file(tmp_path):
    with pytest.raises(ResultsFileError, match="no such file") as info:
        load_run(tmp_path / "nowhere.json")
    assert str(tmp_path / "nowhere.json") in str(info.value)
