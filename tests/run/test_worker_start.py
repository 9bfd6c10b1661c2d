"""How workers start: forked from the fork server (its prelude imported once), each taking on the
parent's environment, import path, folder and CPUs as they are when it is started; the host-level fit's
library imported while the first worker starts, only where a run will fit."""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from pathlib import Path

import pytest
from fakes import STATE_VARIABLE, state_reporting_backend

from launchbench.run.executor import WorkerProcess
from launchbench.run.worker_start import ProcessState, worker_context

FORKSERVER = pytest.mark.skipif(
    "forkserver" not in multiprocessing.get_all_start_methods(), reason="this platform has no fork server"
)


def _state(worker: WorkerProcess) -> dict:
    try:
        return worker.start()["state"]
    finally:
        worker.stop()


@FORKSERVER
def test_a_forked_worker_holds_the_prelude_and_the_parents_state_as_it_is_when_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server starts with the first worker; what the parent changes after that (an environment
    variable, the folder, the import path, the CPUs of the starting thread) reaches the next worker."""
    monkeypatch.delenv(STATE_VARIABLE, raising=False)
    first = _state(WorkerProcess(state_reporting_backend, 0))
    assert first["preloaded"] and first["parent_pid"] != os.getpid()  # forked by the server
    assert first["mark"] is None
    monkeypatch.setenv(STATE_VARIABLE, "changed")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    cpus = sorted(os.sched_getaffinity(0))
    chosen = {cpus[-1]}
    result: dict = {}

    def start_pinned() -> None:  # a device's thread pins itself, then starts its worker
        os.sched_setaffinity(0, chosen)
        result.update(_state(WorkerProcess(state_reporting_backend, 0)))

    thread = threading.Thread(target=start_pinned)
    thread.start()
    thread.join()
    assert result["mark"] == "changed"
    assert result["cwd"] == str(tmp_path)
    assert result["path0"] == str(tmp_path)
    assert result["cpus"] == sorted(chosen)
    assert result["parent_pid"] == first["parent_pid"]  # the same server
    assert sorted(os.sched_getaffinity(0)) == cpus  # the test's own thread kept its CPUs


@FORKSERVER
def test_a_fork_server_that_cannot_start_leaves_workers_spawned(monkeypatch: pytest.MonkeyPatch) -> None:
    from multiprocessing import forkserver

    assert worker_context().get_start_method() == "forkserver"

    def no_socket() -> None:
        raise OSError("no writable folder for the server's socket")

    monkeypatch.setattr(forkserver, "ensure_running", no_socket)
    assert worker_context().get_start_method() == "spawn"
    spawned = _state(WorkerProcess(state_reporting_backend, 0))
    assert spawned["parent_pid"] == os.getpid() and not spawned["preloaded"]


def test_process_state_adopted_replaces_the_environment_path_and_folder(tmp_path: Path) -> None:
    state = ProcessState((("ONLY", "this"),), (str(tmp_path),), str(tmp_path), None)
    saved = ProcessState.current()
    try:
        state.adopt()
        assert dict(os.environ) == {"ONLY": "this"}
        assert sys.path == [str(tmp_path)]
        assert os.getcwd() == str(tmp_path)
    finally:
        saved.adopt()
    assert ProcessState.current() == saved


def test_a_gone_folder_leaves_the_worker_where_it_is(tmp_path: Path) -> None:
    saved = ProcessState.current()
    try:
        ProcessState(saved.environ, saved.path, str(tmp_path / "gone"), saved.cpus).adopt()
        assert os.getcwd() == saved.cwd
    finally:
        saved.adopt()


def test_without_cpu_affinity_the_state_names_no_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS has no sched_getaffinity: the state carries no CPUs, and taking it on sets none."""
    saved = ProcessState.current()
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.delattr(os, "sched_setaffinity")
    state = ProcessState.current()
    assert state.cpus is None and state.environ == saved.environ
    state.adopt()  # no sched_setaffinity to call: an AttributeError if it tried
