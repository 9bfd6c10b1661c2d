"""Runs a batch of launchbench command lines in one process for tests/test_bad_input_sweep.py.

Reads a JSON list of {"id", "argv"} from the file named by argv[1] and writes a JSON list of results to
the file named by argv[2]. Each command runs through click's CliRunner (what `launchbench ARGS` runs,
without a new interpreter per command) under a CPU-time limit (ITIMER_PROF, 10 s); the test starts this
process with a 1 GiB address-space limit, so each command is bounded in time and memory.
"""

from __future__ import annotations

import json
import signal
import sys
import traceback
from typing import Any

CPU_LIMIT_S = 10.0


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
