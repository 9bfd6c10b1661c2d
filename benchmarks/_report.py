"""What the benchmark scripts share: one command timed in a fresh process, the versions, and what every script
does last (print its table under a header and keep a CSV and a text copy)."""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
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
    peak_tree_pss_kib: int | None = None  # with tree=True: the process and its descendants together


def tree_pss_kib(root: int) -> int:
    """The proportional set size of ``root`` and every descendant, summed (KiB, /proc/PID/smaps_rollup):
    a page shared by forked processes counts once in all, split among them; 0 where /proc says nothing."""
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
                    break
            for task in Path(f"/proc/{pid}/task").iterdir():
                pending += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):  # ended between the two reads
            continue
    return total


class _TreePeak(threading.Thread):
    """tree_pss_kib of one process, sampled every ``period`` seconds until stopped; its largest."""

    def __init__(self, root: int, period: float = 0.02):
        super().__init__(daemon=True)
        self.root, self.period, self.peak = root, period, 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(self.period):
            self.peak = max(self.peak, tree_pss_kib(self.root))


def timed_process(
    command: Sequence[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stderr: int | None = None,
    tree: bool = False,
) -> tuple[ProcessTiming, subprocess.Popen[bytes]]:
    """``command`` run to its end in a fresh process, its stdout discarded, timed by os.wait4's rusage (the
    child with the descendants it waited for: their CPU seconds summed, ``ru_maxrss`` the largest of their
    peaks); the process is given back for its ``stderr`` where ``stderr`` is subprocess.PIPE. ``tree``:
    also the peak of the child's and its descendants' memory together (tree_pss_kib every 20 ms)."""
    begin = time.perf_counter()
    child = subprocess.Popen(command, cwd=cwd, env=None if env is None else dict(env),
                             stdout=subprocess.DEVNULL, stderr=stderr)  # fmt: skip
    sampler = _TreePeak(child.pid) if tree else None
    if sampler is not None:
        sampler.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - begin
    if sampler is not None:
        sampler.done.set()
        sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    timing = ProcessTiming(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, child.returncode,
                           None if sampler is None else sampler.peak)  # fmt: skip
    return timing, child


def old_tree_parser(doc: str, pairs: int) -> argparse.ArgumentParser:
    """The arguments of a script that times an older tree against this one: OLD_TREE, --pairs, --out."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("old", type=Path, help="a folder holding the older launchbench package")
    parser.add_argument("--pairs", type=int, default=pairs)
    parser.add_argument("--out", type=Path)
    return parser


def alternate(
    sides: Mapping[str, Path], pairs: int, measure: Callable[[str, Path], dict[str, float]]
) -> tuple[dict[str, list[dict[str, float]]], dict[str, dict[str, float]]]:
    """``measure(name, tree)`` for every side, ``pairs`` times, the sides' order reversed every other
    pair (each printed as it ends): every side's measurements and the median of each of their keys."""
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for pair in range(pairs):
        for name in list(sides) if pair % 2 == 0 else list(reversed(sides)):
            runs[name].append(measure(name, sides[name]))
            print(f"pair {pair + 1} {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in runs[name][-1].items()))
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for name, rs in runs.items()}
    for name, median in medians.items():
        print(f"{name}: median " + ", ".join(f"{k} {v:.2f}" for k, v in median.items()))
    return runs, medians


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
