"""A function mapped over items in forked processes, for the analysis commands' independent parts.

``forked_map`` forks its workers after the caller has everything in memory, so each child has the
function and the items (a run of a thousand cases, its table) without copying or pickling them: only
an item's index goes to a child, and only the function's result comes back, pickled. Where the system
cannot fork (Windows), inside a worker of such a pool (whose processes may not fork their own), or
with one job, the items are mapped here, one after another: the same results in the same order.
"""

from __future__ import annotations

import multiprocessing
import os
import warnings
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_TASK: tuple[Callable[[Any], Any], Sequence[Any]] | None = None  # set in the parent before it forks


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forked_map forks here: a system with fork, and not inside a pool's worker."""
    return "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon


def _run_task(index: int) -> Any:
    if _TASK is None:  # only a worker forked by forked_map runs this
        raise RuntimeError("no task: _run_task runs in a worker that forked_map forked")
    function, items = _TASK
    return function(items[index])


def forked_map(function: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """``[function(item) for item in items]``, up to ``jobs`` items at once in forked workers (one at a
    time, in this process, with ``jobs`` 1, a single item, or where can_fork says no). An exception
    raised in a worker is raised here."""
    workers = min(jobs, len(items))
    if workers <= 1 or not can_fork():
        return [function(item) for item in items]
    global _TASK
    previous, _TASK = _TASK, (function, items)
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns of fork() in a process with threads: here BLAS's idle pool, which the
            # workers leave alone (they compute in one thread each)
            warnings.simplefilter("ignore", DeprecationWarning)
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                return pool.map(_run_task, range(len(items)), chunksize=1)
    finally:
        _TASK = previous


def worth_forking(count: int, least_each: int, jobs: int) -> int:
    """How many of ``jobs`` workers to give ``count`` items where a worker is worth its fork only for at
    least ``least_each`` of them: 1 (no fork) below two workers' worth."""
    return max(1, min(jobs, count // max(1, least_each)))


def chunks(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``items`` in at most ``parts`` consecutive slices of near-equal length (none empty)."""
    count = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), count)
    bounds = [k * size + min(k, extra) for k in range(count + 1)]
    return [items[bounds[k] : bounds[k + 1]] for k in range(count) if bounds[k] < bounds[k + 1]]
