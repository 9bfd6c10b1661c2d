"""The worker process on the CPU (scripted backend): what one worker keeps between the cases it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import HarnessCountingBackend, harness_counting_backend

from launchbench.results.schema import CaseResult
from launchbench.run.executor import WorkerExecutor
from launchbench.run.protocol import run_through
from launchbench.scenario.expand import expand_scenario

SCENARIO = """
name: harness
description: three cases for one worker
sweep:
  length: [1, 2, 3]
chains:
  empty:
    - kind: empty
      repeat: $length
measure: {max_time: 0.05, passes: 1, min_samples: 3, warmup_time: 0.01}
"""


@pytest.fixture
def cases(tmp_path: Path) -> list:
    path = tmp_path / "harness.yaml"
    path.write_text(SCENARIO)
    return expand_scenario(path)


def _round_by_round(executor: WorkerExecutor, case) -> CaseResult:
    started = executor.begin(case, 0, lambda _fraction: None)
    return started if isinstance(started, CaseResult) else run_through(started)


def test_a_worker_measures_its_harness_cost_once_for_the_cases_it_steps_round_by_round(cases):
    """BeginCase/NextRound/FinishCase (ab's rounds) reuse the harness cost the worker measured for its
    first case, as MeasureCase does: every case of one worker carries the first measurement."""
    executor = WorkerExecutor(harness_counting_backend, 0)
    try:
        stepped = [_round_by_round(executor, case) for case in cases]
        whole = [executor.execute(case, 0, lambda _fraction: None) for case in cases]
    finally:
        executor.close()
    assert all(not result.error for result in stepped + whole)
    first = HarnessCountingBackend.HARNESS_STEP
    assert [result.harness_s_per_iter for result in stepped + whole] == [first] * (2 * len(cases))
