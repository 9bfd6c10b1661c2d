"""Where a command's wall time goes, as its user sees it: runs the command, prints every line it writes
(stdout and stderr together) with the seconds since it was started, and the second it exited.

    python benchmarks/cli_timeline.py python -m launchbench run scenarios/quickstart.yaml -d RUN_DIR

For ``launchbench run`` the first line ("launchbench on …") comes once the command is imported, the
scenario read and the first worker started; the ``results:`` line once the tables are written; the
exit after the process's teardown (results/speed/startup-h200).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from typing import TextIO


def timeline(command: Sequence[str]) -> Iterator[tuple[float, str]]:
    """(seconds since the start, line) for each line the command writes, then (seconds, 'exit N')."""
    begin = time.perf_counter()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": os.environ.get("COLUMNS", "200")}
    with subprocess.Popen(
        list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            yield time.perf_counter() - begin, line.rstrip("\n")
        status = proc.wait()
    yield time.perf_counter() - begin, f"exit {status}"


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    command = list(sys.argv[1:] if argv is None else argv)
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    for seconds, line in timeline(command):
        print(f"{seconds:8.3f} {line}", file=out, flush=True)
        if line.startswith("exit "):
            status = int(line.split()[1])
    return status


if __name__ == "__main__":
    raise SystemExit(main())
