"""A sweep of bad command lines and misuses across every command: bad option values, missing and
repeated arguments, output paths that cannot be written, special files and streams.

Each entry is a command line and the exit code docs/limits.md documents for it (0, 1 or 2). Every one
must exit with that code, show no traceback, leave no partial file behind, and stay within 10 s of CPU
time and 1 GiB of address space. Most run in one worker process, once per test session
(tests/sweep_worker.py, CliRunner, one interpreter for many commands); the special files and streams
(FIFOs, devices, a full stdout, an ASCII terminal) run as real `python -m launchbench` processes, where a
hang or a crash would show. The bad files under tests/data/bad/ go through every command that reads them
in tests/scenario/test_bad_inputs.py (scenarios) and tests/results/test_bad_results.py (results), with the same worker.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sweep_worker import HANG_GUARD_S, environment, limit_memory, sweep_once

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "scenarios" / "quickstart.yaml"
RUN_A = ROOT / "tests" / "data" / "h200" / "quickstart-a"
RUN_B = ROOT / "tests" / "data" / "h200" / "quickstart-b"
CPU_LIMIT_S = 10

# id → (argv with {tmp} {good} {a} {b} placeholders, expected exit code, paths that must not exist after)
Case = tuple[list[str], int, list[str]]
CASES: dict[str, Case] = {}


def _add(name: str, argv: list[str], code: int, absent: list[str] | None = None) -> None:
    assert name not in CASES, name
    CASES[name] = (argv, code, absent or [])


# --- command-line values -------------------------------------------------------------------------------
for _args in (
    ["--max-time", "nan"],
    ["--max-time", "inf"],
    ["--max-time", "-1"],
    ["--max-time", "0"],
    ["--max-time", "soon"],
    ["--min-samples", "2"],
    ["--min-samples", "1000000000"],
    ["--min-samples", "5000"],
    ["--passes", "0"],
    ["--passes", "101"],
    ["--target-noise", "0"],
    ["--target-noise", "nan"],
    ["--target-noise", "2"],
    ["--device", "-1"],
    ["--max-cases", "0"],
    ["--bogus"],
):
    _add(
        "run" + "".join(_args),
        ["run", *_args, "--no-isolate", "--out", "{tmp}/runs/cli" + "".join(_args), "{good}"],
        2,
        ["{tmp}/runs/cli" + "".join(_args)],
    )
_add("run-no-scenario", ["run"], 2)
_add("run-missing-scenario", ["run", "{tmp}/nowhere.yaml"], 2)
_add(
    "run-same-file-twice",
    ["run", "--no-isolate", "--out", "{tmp}/runs/twice", "{good}", "{good}"],
    2,
    ["{tmp}/runs/twice"],
)
_add("run-resume-missing", ["run", "--resume", "{tmp}/nowhere"], 2)
_add("validate-no-args", ["validate"], 2)
_add("validate-max-cases-0", ["validate", "--max-cases", "0", "{good}"], 2)
_add("validate-max-cases-text", ["validate", "--max-cases", "many", "{good}"], 2)
_add("validate-twice", ["validate", "{good}", "{good}"], 2)
_add("validate-good", ["validate", "{good}"], 0)
for _i, _args in enumerate(
    (
        ["--threshold", "abc"],
        ["--threshold", "-5%"],
        ["--threshold", "nan%"],
        ["--fail-on", "nope:5%"],
        ["--fail-on", "wall_us_per_launch:abc"],
        ["--fail-on", "wall_us_per_launch:5"],
        ["--alpha", "0"],
        ["--alpha", "1"],
        ["--alpha", "nan"],
        ["--format", "xml"],
        ["-m", "nope"],
        ["--bogus"],
    )
):
    _add(f"compare-option-{_i}:{' '.join(_args)}", ["compare", "{a}", "{b}", *_args], 2)
_add("compare-one-run", ["compare", "{a}"], 2)
_add("compare-missing-run", ["compare", "{a}", "{tmp}/nowhere"], 2)
_add("compare-same-run", ["compare", "{a}", "{a}"], 0)
_add(
    "compare-gate-same-run",
    ["compare", "{a}", "{a}", "--fail-on", "wall_us_per_launch:5%", "--allow-blind"],
    0,
)
_add("compare-gate-same-run-blind", ["compare", "{a}", "{a}", "--fail-on", "wall_us_per_launch:5%"], 1)
_add("check-format-csv", ["check", "{a}", "--format", "csv"], 2)
_add("check-missing-run", ["check", "{tmp}/nowhere"], 2)
_add("check-missing-scenario", ["check", "{a}", "--scenario", "{tmp}/nowhere.yaml"], 2)
_add("plot-format-jpg", ["plot", "{a}", "--format", "jpg"], 2)
_add("plot-missing-run", ["plot", "{tmp}/nowhere"], 2)
_add("plot-no-run", ["plot"], 2)
_add("graph-no-out", ["graph", "{good}"], 2)
_add("graph-bad-suffix", ["graph", "{good}", "--out", "{tmp}/g.txt"], 2, ["{tmp}/g.txt"])
_add("env-bad-device", ["env", "--device", "-1"], 2)
_add("unknown-command", ["frobnicate"], 2)
_add("version", ["--version"], 0)
_add("help", ["--help"], 0)

# --- output paths ---------------------------------------------------------------------------------------
for _option in ("-o", "--junit"):
    for _label, _target, _absent in (
        ("a-directory", "{tmp}", []),
        ("missing-folder", "{tmp}/no/such/folder/out.x", ["{tmp}/no"]),
        ("under-a-file", "{tmp}/a-file.txt/out.x", []),
        ("device", "/dev/null", []),
        ("fifo", "{tmp}/out-fifo", []),
        ("symlink-loop", "{tmp}/out-loop", []),
        ("an-input", "{a}/results.json", []),
        ("empty-name", "", []),
    ):
        _add(f"compare{_option}:{_label}", ["compare", "{a}", "{b}", _option, _target], 2, _absent)
        _add(
            f"check{_option}:{_label}", ["check", "{a}", "--scenario", "{good}", _option, _target], 2, _absent
        )
_add(
    "compare-o-and-junit-same",
    ["compare", "{a}", "{b}", "-o", "{tmp}/same.x", "--junit", "{tmp}/same.x"],
    2,
    ["{tmp}/same.x"],
)
_add("plot-out-is-a-file", ["plot", "{a}", "--out", "{tmp}/a-file.txt"], 2)
_add("run-out-is-a-file", ["run", "--no-isolate", "--out", "{tmp}/a-file.txt", "{good}"], 2)
_add("run-results-root-is-a-file", ["run", "--no-isolate", "--results-root", "{tmp}/a-file.txt", "{good}"], 2)
_add("run-out-holds-results", ["run", "--no-isolate", "--out", "{a}", "{good}"], 2)
_add("graph-out-missing-folder", ["graph", "{good}", "--out", "{tmp}/no-graph/g.dot"], 2, ["{tmp}/no-graph"])
_add("graph-out-directory", ["graph", "{good}", "--out", "{tmp}"], 2)
_add("compare-o-replaces", ["compare", "{a}", "{b}", "--format", "csv", "-o", "{tmp}/existing.csv"], 0)

# --- special files and streams: real processes ---------------------------------------------------------
# id → (argv, expected exit code, extra environment, stdout target: None (a pipe) or a path)
PROCESS_CASES: dict[str, tuple[list[str], int, dict[str, str], str | None]] = {
    "validate-fifo": (["validate", "{tmp}/fifo.yaml"], 2, {}, None),
    "validate-dev-zero": (["validate", "/dev/zero"], 2, {}, None),
    "validate-symlink-loop": (["validate", "{tmp}/loop.yaml"], 2, {}, None),
    "validate-huge-file": (["validate", "{tmp}/huge.yaml"], 2, {}, None),
    "validate-large-sweep": (["validate", "{tmp}/large-sweep.yaml"], 2, {}, None),
    "run-large-sweep": (
        ["run", "--no-isolate", "--out", "{tmp}/runs/large", "{tmp}/large-sweep.yaml"],
        2,
        {},
        None,
    ),
    "compare-fifo-results": (["compare", "{tmp}/fifo-run", "{a}"], 2, {}, None),
    "check-dev-zero-results": (["check", "/dev/zero"], 2, {}, None),
    "validate-to-dev-full": (["validate", "{good}"], 2, {}, "/dev/full"),
    "compare-to-dev-full": (["compare", "{a}", "{b}"], 2, {}, "/dev/full"),
    "compare-ascii-terminal": (
        ["compare", "{a}", "{b}"],
        0,
        {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
        None,
    ),
    "validate-ascii-terminal": (
        ["validate", "{good}"],
        0,
        {"LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
        None,
    ),
}


def _fill(text: str, tmp: Path) -> str:
    return text.format(tmp=tmp, good=GOOD, a=RUN_A, b=RUN_B)


def _special_files(tmp: Path) -> None:
    (tmp / "runs").mkdir()
    (tmp / "a-file.txt").write_text("not a folder\n")
    (tmp / "existing.csv").write_text("old contents\n")
    os.mkfifo(tmp / "fifo.yaml")
    os.mkfifo(tmp / "out-fifo")
    (tmp / "fifo-run").mkdir()
    os.mkfifo(tmp / "fifo-run" / "results.json")
    (tmp / "loop.yaml").symlink_to(tmp / "loop.yaml")
    (tmp / "out-loop").symlink_to(tmp / "out-loop")
    with open(tmp / "huge.yaml", "w") as handle:
        handle.write("name: huge\ndescription: padding\n# " + "x" * (5 << 20) + "\n")
    body = "".join("  - {kind: empty, repeat: $n}\n" for _ in range(15_000))
    values = ", ".join(str(i + 1) for i in range(1000))
    (tmp / "large-sweep.yaml").write_text(
        f"name: big\ndescription: d\nsweep:\n  n: [{values}]\nchain:\n{body}"
    )


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    def prepare(tmp: Path) -> dict[str, list[str]]:
        _special_files(tmp)
        return {name: [_fill(a, tmp) for a in argv] for name, (argv, _, _) in CASES.items()}

    return sweep_once(tmp_path_factory, "commands", prepare)


def test_the_sweep_is_large_enough():
    """Its own command lines; the bad files add their commands in test_bad_inputs and test_bad_results."""
    assert len(CASES) + len(PROCESS_CASES) >= 100
    commands = {argv[0] for argv, _, _ in CASES.values() if argv and not argv[0].startswith("-")}
    assert {"run", "validate", "compare", "check", "plot", "graph", "env"} <= commands


@pytest.mark.parametrize("name", sorted(CASES))
def test_sweep(sweep, name):
    tmp, results = sweep
    argv, code, absent = CASES[name]
    result = results[name]
    assert result["crash"] is None, result["crash"]
    assert "Traceback" not in result["stdout"] + result["stderr"]
    assert result["code"] == code, (result["stdout"][-800:], result["stderr"][-800:])
    if code == 2:
        lines = result["stderr"].strip().splitlines()
        assert lines, "an input error says why"
        assert lines[-1].startswith(("launchbench: error:", "Error:")), lines[-1]
    for path in absent:
        assert not Path(_fill(path, tmp)).exists(), f"{path} left behind"
    leftovers = [p.name for p in tmp.iterdir() if p.name.endswith(".tmp")]
    assert not leftovers, leftovers


def test_an_existing_output_is_replaced_whole(sweep):
    tmp, results = sweep
    assert results["compare-o-replaces"]["code"] == 0
    text = (tmp / "existing.csv").read_text()
    assert "old contents" not in text and text.startswith("scenario,")


@pytest.fixture(scope="module")
def processes(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, subprocess.CompletedProcess[str]]]:
    tmp = tmp_path_factory.mktemp("processes")
    _special_files(tmp)

    def one(name: str) -> tuple[str, subprocess.CompletedProcess[str]]:
        argv, _, extra, stdout = PROCESS_CASES[name]

        def limits() -> None:
            limit_memory()
            resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S))

        target = open(stdout, "w") if stdout else subprocess.PIPE  # noqa: SIM115
        command = [sys.executable, "-m", "launchbench", *[_fill(a, tmp) for a in argv]]
        try:
            proc = subprocess.run(
                command,
                stdout=target,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=HANG_GUARD_S,
                preexec_fn=limits,
                env=environment(extra),
                cwd=tmp,
            )
        except subprocess.TimeoutExpired:
            proc = subprocess.CompletedProcess(command, -1, "", f"hung: no exit within {HANG_GUARD_S} s")
        finally:
            if stdout:
                target.close()  # type: ignore[union-attr]
        return name, proc

    with ThreadPoolExecutor(4) as pool:
        done = dict(pool.map(one, sorted(PROCESS_CASES)))
    return tmp, done


@pytest.mark.parametrize("name", sorted(PROCESS_CASES))
def test_special_files_and_streams(processes, name):
    tmp, done = processes
    proc = done[name]
    _, code, _, _ = PROCESS_CASES[name]
    output = (proc.stdout or "") + proc.stderr
    assert proc.returncode == code, output[-2000:]  # -9/-24 would be the memory or CPU limit
    assert "Traceback" not in output
    if code == 2:
        assert proc.stderr.strip().splitlines()[-1].startswith("launchbench: error:"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp / "runs" / "large").exists()


def test_a_sweep_runs_once_per_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Asked again (by another module, or by another xdist worker after the file lock), a sweep is read
    from the results its first run left, not run again."""
    prepared: list[Path] = []

    def prepare(tmp: Path) -> dict[str, list[str]]:
        prepared.append(tmp)
        return {"version": ["--version"]}

    first = sweep_once(tmp_path_factory, "once", prepare)
    second = sweep_once(tmp_path_factory, "once", prepare)
    assert len(prepared) == 1 and first == second
    assert first[1]["version"]["code"] == 0 and first[1]["version"]["stdout"].startswith("launchbench")
