"""Bad results files: every file under tests/data/bad/results/ (with the message fragments it must give in
NAME.expected beside it), and the special files a test makes (a FIFO, /dev/zero, a symbolic link loop, a
file over the size cap), is refused by every command that reads results (compare, check, plot, history
ingest): exit 2, one line naming the file and the JSON path, no traceback, nothing written (no history
database made)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchbench.cli import cli
from launchbench.errors import ResultsFileError
from launchbench.results.store import MAX_RESULTS_BYTES, load_run

ROOT = Path(__file__).resolve().parents[1]
BAD = Path(__file__).parent / "data" / "bad" / "results"
GOOD = Path(__file__).parent / "data" / "golden" / "results-v2.json"
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


def _assert_refused(args: list[str], path: Path, fragments: tuple[str, ...] | list[str], out: Path) -> None:
    result = CliRunner().invoke(cli, args, catch_exceptions=True)
    assert result.exit_code == 2, (args, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    message = result.stderr.strip()
    assert "Traceback" not in result.output
    assert len(message.splitlines()) == 1, message
    assert message.startswith(f"launchbench: error: {path}"), message
    for text in fragments:
        assert text in message, f"{text!r} not in {message!r}"
    assert not any(out.iterdir()), "a refused command wrote a file"


@pytest.mark.parametrize("command", ["compare", "check", "plot"])
@pytest.mark.parametrize("name", CASES)
def test_bad_results_file_is_refused_by_every_command(name, command, tmp_path):
    path = BAD / name
    out = tmp_path / "out"
    out.mkdir()
    _assert_refused(_commands(path, out)[command], path, expected(name), out)


@pytest.mark.parametrize("command", ["compare", "check", "plot"])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_file_is_refused_without_reading_it(name, command, tmp_path):
    make, fragments = SPECIAL[name]
    (tmp_path / "run").mkdir()
    path = make(tmp_path / "run")
    out = tmp_path / "out"
    out.mkdir()
    _assert_refused(_commands(path, out)[command], path, fragments, out)


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


@pytest.mark.parametrize("name", CASES)
def test_bad_results_file_is_refused_by_history_ingest(name, tmp_path):
    """history ingest takes run directories: the bad file as a run directory's results.json (a bad run
    directory as it is); refused before the database is opened, so none is made."""
    source = BAD / name
    if source.is_dir():
        run, shown = source, source
    else:
        run = tmp_path / "run"
        run.mkdir()
        shown = run / "results.json"
        shown.write_bytes(source.read_bytes())
    db = tmp_path / "history.sqlite"
    result = CliRunner().invoke(cli, ["history", "ingest", str(run), "--db", str(db)], catch_exceptions=True)
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1 and message.startswith(f"launchbench: error: {shown}"), message
    for text in expected(name):
        assert text in message, f"{text!r} not in {message!r}"
    assert not db.exists()


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
