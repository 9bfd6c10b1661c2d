"""compare_runs and run_table with their work in forked processes give what they give in one process."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from builders import make_run

from launchbench import forked
from launchbench.analysis import compare as analysis_compare
from launchbench.analysis import table as analysis_table
from launchbench.analysis.compare import PAIRED_ROUNDS, compare_runs
from launchbench.results.store import load_run

H200 = Path(__file__).parents[1] / "data" / "h200"
pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="this system cannot fork")


def _pids_of_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pid of every process that compared a chunk of rows (recorded in the parent as they return)."""
    seen: list[int] = []
    made = forked.forked_map

    def recording(function, items, jobs):  # type: ignore[no-untyped-def]
        def with_pid(item):  # type: ignore[no-untyped-def]
            return os.getpid(), function(item)

        answers = made(with_pid, items, jobs)
        seen.extend(pid for pid, _ in answers)
        return [answer for _, answer in answers]

    monkeypatch.setattr(analysis_compare, "forked_map", recording)
    return seen


@pytest.mark.parametrize("design", ["separate", "paired"])
def test_rows_compared_in_forked_processes_are_the_rows_compared_here(monkeypatch, design):
    """With one worker per 3 rows, the comparison of two runs of the real H200 quickstart (16 rows) is
    made in forked processes (three chunks) and equals, field by field, the one made in this process."""
    base = load_run(H200 / "quickstart-a")
    cur = load_run(H200 / "quickstart-b") if (H200 / "quickstart-b").exists() else make_run(seed=3)
    chosen = PAIRED_ROUNDS if design == "paired" else analysis_compare.SEPARATE_RUNS
    here = compare_runs(base, cur, design=chosen)
    monkeypatch.setattr(analysis_compare, "ROWS_PER_JOB", 3)
    pids = _pids_of_rows(monkeypatch)
    forked_rows = compare_runs(base, cur, design=chosen, jobs=3)
    assert len(pids) == 3 and os.getpid() not in pids  # three chunks, each compared in a worker
    assert forked_rows == here


def test_too_few_rows_for_a_worker_are_compared_here(monkeypatch):
    base = load_run(H200 / "quickstart-a")
    pids = _pids_of_rows(monkeypatch)
    compare_runs(base, base, jobs=8)  # 16 rows, under two workers' ROWS_PER_JOB
    assert pids == [os.getpid()]


def test_table_rows_made_in_forked_processes_are_the_rows_made_here(monkeypatch):
    run = load_run(H200 / "quickstart-a")
    here = analysis_table.run_table(run)
    monkeypatch.setattr(analysis_table, "CASES_PER_JOB", 2)
    calls: list[int] = []
    made = analysis_table.forked_map

    def counted(function, items, jobs):  # type: ignore[no-untyped-def]
        calls.append(jobs)
        return made(function, items, jobs)

    monkeypatch.setattr(analysis_table, "forked_map", counted)
    pd.testing.assert_frame_equal(analysis_table.run_table(run, jobs=4), here)
    assert calls == [4]  # 8 cases, 2 each: four workers
