"""launchbench.forked: a function mapped in forked workers gives what the plain map gives, in order."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from launchbench import forked
from launchbench.forked import chunks, forked_map, usable_cpus

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="this system cannot fork")


def _pid_and_square(value: int) -> tuple[int, int]:
    return os.getpid(), value * value


def test_the_items_are_mapped_in_other_processes_in_their_order():
    """The first three items wait for each other (a barrier the workers have by fork), so three workers
    must take them: at most three processes, none of them this one, the results in the items' order."""
    barrier = multiprocessing.get_context("fork").Barrier(3, timeout=60)

    def meeting(value: int) -> tuple[int, int]:
        if value < 3:
            barrier.wait()
        return _pid_and_square(value)

    pids, squares = zip(*forked_map(meeting, list(range(12)), jobs=3))
    assert list(squares) == [v * v for v in range(12)]
    assert os.getpid() not in pids and len(set(pids)) == 3 and len(set(pids[:3])) == 3


def test_one_job_or_one_item_maps_here():
    assert {pid for pid, _ in forked_map(_pid_and_square, [1, 2, 3], jobs=1)} == {os.getpid()}
    assert forked_map(_pid_and_square, [4], jobs=8) == [(os.getpid(), 16)]
    assert forked_map(_pid_and_square, [], jobs=8) == []


def test_a_worker_sees_what_the_parent_held_without_its_being_pickled():
    """The function is a closure over an object that cannot be pickled: the workers have it by fork."""
    held = {"lock": multiprocessing.Lock(), "scale": 7}  # a Lock refuses pickling outside spawning

    def scaled(value: int) -> int:
        return value * held["scale"]  # type: ignore[operator]

    assert forked_map(scaled, [1, 2, 3], jobs=2) == [7, 14, 21]


def _fails_on_two(value: int) -> int:
    if value == 2:
        raise ValueError(f"no {value}")
    return value


def test_an_exception_in_a_worker_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="no 2"):
        forked_map(_fails_on_two, [1, 2, 3], jobs=2)
    assert forked._TASK is None  # nothing left behind for a later map


def _nested(value: int) -> list[tuple[int, int]]:
    return forked_map(_pid_and_square, [value, value + 1], jobs=2)


def test_a_map_inside_a_worker_maps_in_that_worker():
    """A pool's workers may not fork their own: a map there runs in the worker, one item at a time."""
    for inner in forked_map(_nested, [1, 5], jobs=2):
        assert len({pid for pid, _ in inner}) == 1 and os.getpid() not in {pid for pid, _ in inner}


def test_chunks_are_consecutive_near_equal_and_never_empty():
    assert chunks(list(range(10)), 3) == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert chunks(list(range(2)), 5) == [[0], [1]]
    assert chunks([], 4) == [] and chunks([1, 2], 0) == [[1, 2]]
    assert usable_cpus() >= 1
