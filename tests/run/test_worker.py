"""The worker process on the CPU (scripted backend): what it imports before its first message, what one
worker keeps between the cases it runs, and how it ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fakes import (
    TEARDOWN_FILE_VARIABLE,
    HarnessCountingBackend,
    harness_counting_backend,
    teardown_marking_backend,
)

from launchbench.results.schema import CaseResult
from launchbench.run.ab import VariantWorker, parse_variant
from launchbench.run.executor import WorkerExecutor, WorkerProcess
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


# what a worker does not load before its first message: the parent's libraries (tables, figures, the
# console, the history, the CLI), the GPU libraries (its backend imports them once asked to start), the
# parent's side of a run, and what only a rank's worker runs (launchbench.run.ranks)
NOT_IN_A_WORKER = (
    "pandas", "scipy", "matplotlib", "rich", "click", "sqlalchemy", "alembic", "sklearn", "ruptures",
    "jinja2", "yaml", "cupy", "torch", "launchbench.analysis", "launchbench.report", "launchbench.history",
    "launchbench.fleet", "launchbench.cli", "launchbench.api", "launchbench.run.runner",
    "launchbench.run.session", "launchbench.run.executor", "launchbench.run.ab", "launchbench.run.ranks",
)  # fmt: skip


def test_the_worker_module_loads_only_what_every_worker_runs() -> None:
    """Every pass starts a worker, and what ``launchbench.run.worker`` imports is loaded before its first
    message (its Booted): NumPy, pydantic and launchbench's models, none of NOT_IN_A_WORKER."""
    code = "import sys, launchbench.run.worker; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "numpy" in loaded and "launchbench.results.schema" in loaded  # what it does need, loaded
    assert [m for m in loaded if m.startswith(NOT_IN_A_WORKER)] == []


def test_a_worker_forked_from_the_prelude_builds_and_loads_nothing_at_its_first_result() -> None:
    """The fork servers import launchbench.run.fork_prelude before they fork, so a forked worker begins
    with what its first result needs: every results model's validator built (pydantic builds each at its
    first use, with a lookup of plugins first), and no module loaded by its first ``np.median`` (the
    stopping rule, the harness cost) or random generator (its inputs), as NumPy loads numpy.ma and
    numpy.random then (about 40 ms of every fork otherwise: results/speed/worker-forks-2026-12-07.json)."""
    code = (
        "import sys, launchbench.run.fork_prelude, numpy\n"
        "from launchbench.results import schema\n"
        "from pydantic import BaseModel\n"
        "models = [m for m in vars(schema).values() if isinstance(m, type) and issubclass(m, BaseModel)]\n"
        "print(*sorted(m.__name__ for m in models if m is not BaseModel and not m.__pydantic_complete__))\n"
        "before = set(sys.modules)\n"
        "numpy.median(numpy.arange(3.0)); numpy.random.default_rng(1)\n"
        "schema.CanaryReading(graph_s_per_node=5e-7, eager_s_per_launch=5e-6)\n"
        "print(*sorted(set(sys.modules) - before))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["", ""], proc.stdout


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


@pytest.mark.parametrize("started", ["spawned", "program"])
def test_a_worker_the_parent_stops_ends_with_exit_code_0_and_no_interpreter_teardown(
    started: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After StopWorker a worker has nothing left to do: it ends at once, exit code 0, without the
    interpreter's teardown (the atexit handler its backend registered never runs), whether spawned
    (runner) or started as a program (ab)."""
    marks = tmp_path / "teardown.txt"
    monkeypatch.setenv(TEARDOWN_FILE_VARIABLE, str(marks))
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[1]))  # the program imports fakes
    factory = teardown_marking_backend
    if started == "spawned":
        worker: WorkerProcess = WorkerProcess(factory, 0)
    else:
        worker = VariantWorker(parse_variant("env=LAUNCHBENCH_TEST_SIDE=A"), factory, 0)
    worker.start()
    worker.stop()
    assert worker.process.exitcode == 0
    assert not marks.exists()
