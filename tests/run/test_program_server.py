"""ab's workers forked from a program server of their variant (launchbench.run.program_server): each a
process of its own, a child of its side's server, with the environment and CPUs a spawned worker had;
exit codes come back through the status pipe; a server that cannot start or answer leaves the side's
workers spawned as programs."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest
from fakes import SIDE_VARIABLE, process_reporting_backend

from launchbench.run import program_server
from launchbench.run.ab import VariantWorker, VariantWorkers, parse_variant, worker_environment
from launchbench.run.executor import WorkerExecutor
from launchbench.run.program_server import ProgramServer, ServedChild, platform_can_serve
from launchbench.run.worker import CPUS_VARIABLE, NVLS_VARIABLE

TESTS = Path(__file__).parents[1]
FACTORY = "fakes:process_reporting_backend"
pytestmark = pytest.mark.skipif(not platform_can_serve(), reason="the platform cannot fork")


@pytest.fixture
def tests_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # the workers import the scripted backend from tests/


def _reported(worker: VariantWorker) -> dict[str, object]:
    executor = WorkerExecutor(process_reporting_backend, 0, spawn=lambda: worker)
    try:
        return executor.start()["process"]
    finally:
        executor.close()


def test_forked_workers_are_children_of_the_server_with_the_variants_environment(
    tests_on_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)  # the server sets it for itself only
    variant = parse_variant(f"env={SIDE_VARIABLE}=B")
    cpu = max(os.sched_getaffinity(0))
    workers = VariantWorkers(variant, process_reporting_backend, 0, (cpu,))
    try:
        first, second = _reported(workers()), _reported(workers())
        server = workers._server
        assert server is not None
        spawned = _reported(VariantWorker(variant, process_reporting_backend, 0, (cpu,)))
    finally:
        workers.close()
    assert first["ppid"] == second["ppid"] == server.popen.pid != os.getpid()
    assert first["pid"] != second["pid"]
    assert spawned["ppid"] == os.getpid()
    for forked in (first, second):
        expected = {**worker_environment(variant, (cpu,)), NVLS_VARIABLE: "0"}  # the worker's own setting
        assert forked["environ"] == spawned["environ"] == expected
        assert forked["cpus"] == spawned["cpus"] == [cpu]
        assert forked["modules"] == ["launchbench.run.execute", "numpy"]
    assert "OPENBLAS_NUM_THREADS" not in first["environ"]  # type: ignore[operator]
    assert first["environ"][CPUS_VARIABLE] == str(cpu)  # type: ignore[index]
    assert server.popen.wait(5) == 0  # closed: the server ended


def test_exit_codes_come_through_the_status_pipe(tests_on_path: None) -> None:
    variant = parse_variant("")
    server = ProgramServer(sys.executable, worker_environment(variant), FACTORY)
    try:
        conn, stopped = server.fork(0)
        assert stopped.is_alive() and stopped.exitcode is None
        conn.close()  # the worker's pipe closed before its Booted: it ends on its own, exit 0
        stopped.join(30)
        assert stopped.exitcode == 0 and not stopped.is_alive()
        _, killed = server.fork(0)
        killed.kill()
        killed.join(30)
        assert killed.exitcode == -signal.SIGKILL
    finally:
        server.close()


def test_a_bad_factory_fails_its_worker_as_a_spawned_one_fails(tests_on_path: None) -> None:
    server = ProgramServer(sys.executable, worker_environment(parse_variant("")), "fakes:no_such_factory")
    try:
        _, child = server.fork(0)
        child.join(30)
        assert child.exitcode == 1
    finally:
        server.close()


def test_a_child_outlives_its_server_without_a_false_exit_code(tests_on_path: None) -> None:
    server = ProgramServer(sys.executable, worker_environment(parse_variant("")), FACTORY)
    conn, child = server.fork(0)
    server.popen.kill()
    server.popen.wait(5)
    try:
        assert child.is_alive()  # its server is gone; the worker still waits for StartBackend
    finally:
        conn.close()
    deadline = time.monotonic() + 30
    while child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert child.exitcode == program_server.UNKNOWN_EXIT
    server.close()


def test_a_server_that_cannot_answer_leaves_the_side_spawning(tests_on_path: None, tmp_path: Path) -> None:
    fake = tmp_path / "python-without-the-server"
    fake.write_text(
        f'#!/bin/sh\ncase "$2" in launchbench.run.program_server) exit 0;; esac\nexec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    workers = VariantWorkers(parse_variant(f"python={fake}"), process_reporting_backend, 0)
    try:
        reported = _reported(workers())
    finally:
        workers.close()
    assert reported["ppid"] == os.getpid()  # spawned by this process (the script exec'd Python)
    assert workers._server is None and not workers._forking


def test_a_served_child_is_what_the_executor_stops(tests_on_path: None) -> None:
    workers = VariantWorkers(parse_variant(""), process_reporting_backend, 0)
    try:
        worker = workers()
        assert isinstance(worker.process, ServedChild)
        executor = WorkerExecutor(process_reporting_backend, 0, spawn=lambda: worker)
        executor.start()
        executor.close()
        assert worker.process.exitcode == 0
    finally:
        workers.close()


def test_a_variants_own_interpreter_runs_its_server_and_so_its_workers(
    tests_on_path: None, tmp_path: Path
) -> None:
    python = tmp_path / "variant-python"  # another interpreter: what it sets before Python starts is seen
    python.write_text(f'#!/bin/sh\nexport VARIANT_INTERPRETER=yes\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    workers = VariantWorkers(parse_variant(f"python={python}"), process_reporting_backend, 0)
    try:
        first, second = _reported(workers()), _reported(workers())
        server = workers._server
        assert server is not None
    finally:
        workers.close()
    assert first["ppid"] == second["ppid"] == server.popen.pid  # the wrapper exec'd the server
    assert first["environ"]["VARIANT_INTERPRETER"] == "yes"  # type: ignore[index]
