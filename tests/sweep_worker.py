"""Runs a batch of launchbench command lines in one process, for the sweeps of bad input.

As a script: reads a JSON list of {"id", "argv"} from the file named by argv[1] and writes a JSON list of results to
the file named by argv[2]. Each command runs through click's CliRunner (what `launchbench ARGS` runs,
without a new interpreter per command) under a CPU-time limit (ITIMER_PROF, 10 s); the test starts this
process with a 1 GiB address-space limit, so each command is bounded in time and memory.

As a module: ``sweep_once`` starts that process, once per test session however many xdist workers ask
(the first takes a file lock, runs the sweep and leaves its results beside the lock; the others wait for
the lock and read them), under the address-space limit and with a guard against a hang.
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

CPU_LIMIT_S = 10.0
MEMORY_LIMIT = 1 << 30
HANG_GUARD_S = 300  # wall clock, only against a hang (a loaded machine starts Python slowly)
ROOT = Path(__file__).resolve().parents[1]


def limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a launchbench process: this checkout importable, one thread per BLAS."""
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(
        {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    )
    env.update(extra or {})
    return env


def _run_worker(tmp: Path, commands: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    cases_file, results_file = tmp.parent / f"{tmp.name}-cases.json", tmp.parent / f"{tmp.name}-out.json"
    cases_file.write_text(json.dumps([{"id": name, "argv": argv} for name, argv in sorted(commands.items())]))
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), str(cases_file), str(results_file)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S * 3,
        preexec_fn=limit_memory,
        env=environment(),
        cwd=tmp,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {r["id"]: r for r in json.loads(results_file.read_text())}


def sweep_once(
    factory: Any, name: str, prepare: Callable[[Path], dict[str, list[str]]]
) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The folder the sweep ``name`` ran in and its results by id, run once per session.

    ``factory`` is pytest's tmp_path_factory; ``prepare`` fills the folder with what the commands need and
    returns them (id → argv); each runs in one worker process with the folder as its working directory."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by every worker of this session
    tmp, cached = root / f"sweep-{name}", root / f"sweep-{name}.json"
    with open(root / f"sweep-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cached.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # what a failed attempt left
            tmp.mkdir()
            results = _run_worker(tmp, prepare(tmp))
            cached.write_text(json.dumps(results))
    return tmp, json.loads(cached.read_text())


class CpuLimit(Exception):
    pass


def _expired(_signum: int, _frame: Any) -> None:
    raise CpuLimit(f"more than {CPU_LIMIT_S:g} s of CPU time")


def main() -> None:
    from click.testing import CliRunner

    from launchbench.cli import cli

    with open(sys.argv[1], encoding="utf-8") as handle:
        cases = json.load(handle)
    signal.signal(signal.SIGPROF, _expired)
    results = []
    for case in cases:
        runner = CliRunner()
        signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT_S)
        try:
            result = runner.invoke(cli, case["argv"], catch_exceptions=True)
            code = result.exit_code
            stdout, stderr = result.stdout, result.stderr
            exc = result.exception
            crash = None
            if exc is not None and not isinstance(exc, SystemExit):
                crash = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-3000:]
        except CpuLimit as err:  # raised outside the command's own handlers
            code, stdout, stderr, crash = -1, "", "", str(err)
        except MemoryError:
            code, stdout, stderr, crash = -1, "", "", "MemoryError: more than the address-space limit"
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        results.append(
            {
                "id": case["id"],
                "code": code,
                "stdout": stdout[-4000:],
                "stderr": stderr[-4000:],
                "crash": crash,
            }
        )
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        json.dump(results, handle)


if __name__ == "__main__":
    main()
