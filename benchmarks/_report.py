"""What the benchmark scripts share: one command timed in a fresh process, the versions, and what every script
does last (print its table under a header and keep a CSV and a text copy)."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas only for the table's type: a script that only asks the versions loads none of it
    import pandas as pd


@dataclass(frozen=True)
class ProcessTiming:
    """One process's wall seconds, its own user and system CPU seconds, its peak resident memory (KiB, as
    Linux reports ``ru_maxrss``) and its exit code."""

    wall_s: float
    user_s: float
    system_s: float
    peak_rss_kib: int
    code: int


def timed_process(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stderr: int | None = None,
) -> tuple[ProcessTiming, subprocess.Popen[bytes]]:
    """``command`` run to its end in a fresh process, its stdout discarded, timed by os.wait4's rusage (the
    child alone); the process is given back for its ``stderr`` where ``stderr`` is subprocess.PIPE."""
    begin = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=None if env is None else dict(env),
                             stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - begin
    child.returncode = os.waitstatus_to_exitcode(status)
    timing = ProcessTiming(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, child.returncode)
    return timing, child


def library_versions(names: tuple[str, ...]) -> dict[str, str]:
    """Python's version and each named distribution's ("not installed" for one that is not)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def write_report(table: pd.DataFrame, header: str, out: Path | None, stem: str, digits: int) -> None:
    text = header + table.to_string(index=False, float_format=lambda v: f"{v:.{digits}f}")
    print(text)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / f"{stem}.csv", index=False)
        (out / f"{stem}.txt").write_text(text + "\n")
