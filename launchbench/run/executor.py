"""Where a case-pass runs: in this process (InProcessExecutor) or in a worker process (WorkerExecutor).

An executor owns what happens around a case: starting the backend, timeouts, a fresh worker process for
every pass (as pyperf spreads a benchmark over processes: what a process happens to get — its CUDA
streams' hardware queues, its memory placement, the core it lands on — then varies between the passes
of one run, where the statistics see it, instead of between runs), and a dead or poisoned worker,
which fails only the case in flight."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any, Protocol

from launchbench.errors import LaunchbenchError, NoGpuError
from launchbench.results.schema import CaseResult
from launchbench.run.execute import execute_case, failed_case
from launchbench.run.worker import serve
from launchbench.scenario.core import Case

WORKER_START_TIMEOUT = 180.0
CASE_TIMEOUT_FLOOR = 300.0

Progress = Callable[[float], None]


class Executor(Protocol):
    def start(self) -> dict[str, Any]:
        """Start the backend; the environment it runs on."""
        ...

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        """One pass of one case (its settings already those of one pass); a failure becomes a result."""
        ...

    def close(self) -> None: ...


class InProcessExecutor:
    """Every case in this process, on one backend (no isolation: a CUDA fault ends the run)."""

    def __init__(self, backend_factory: Callable[[int], Any], device: int):
        self._factory = backend_factory
        self._device = device
        self._backend: Any = None

    def start(self) -> dict[str, Any]:
        self._backend = self._factory(self._device)
        return self._backend.environment()

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        return execute_case(self._backend, case, self._backend.clock, progress)

    def close(self) -> None:
        return None


def case_timeout(case: Case) -> float:
    return max(CASE_TIMEOUT_FLOOR, 5 * case.measure.max_time + 60)


class WorkerExecutor:
    """Each case in a worker process: a fresh one for every pass, and after a worker died, timed out or
    ended itself because its case may have left the CUDA context unusable."""

    def __init__(
        self,
        backend_factory: Callable[[int], Any],
        device: int,
        spawn: Callable[[], WorkerProcess] | None = None,
    ):
        """``spawn`` starts a worker process (by default one of ``backend_factory`` on ``device``)."""
        self._spawn = spawn or (lambda: WorkerProcess(backend_factory, device))
        self._worker: WorkerProcess | None = None
        self._pass: int | None = None

    def start(self) -> dict[str, Any]:
        """Start a fresh worker (stopping the one running); the environment it runs on."""
        self.close()
        self._worker = self._spawn()
        return self._worker.start()

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        if self._pass is not None and pass_index != self._pass:
            self.close()  # every pass in a fresh process: process-level state varies between passes
        self._pass = pass_index
        if self._worker is None or not self._worker.alive():
            self.start()
        assert self._worker is not None
        worker = self._worker
        timeout = case_timeout(case)
        answer = worker.run(case, progress, timeout)
        if answer is None:
            self._worker = None
            if worker.timed_out:
                return failed_case(
                    case, f"the case did not finish within {timeout:.0f} s; its worker was stopped"
                )
            why = f"the worker process died (exit code {worker.process.exitcode}) while running this case"
            return failed_case(case, why)
        result, ending = answer
        if ending:
            self.close()
        return result

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class WorkerProcess:
    """A spawned worker process (worker.serve) and its pipe; ``conn``, ``process`` (is_alive, exitcode,
    join, kill) and ``timed_out`` are what the methods use, so a worker started otherwise can derive."""

    def __init__(self, factory: Callable[[int], Any], device: int):
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=serve, args=(child, factory, device), daemon=True)
        self.process.start()
        child.close()
        self.timed_out = False

    def start(self) -> dict[str, Any]:
        if not self.conn.poll(WORKER_START_TIMEOUT):
            self.stop()
            raise LaunchbenchError("the GPU worker did not start within 3 minutes")
        try:
            kind, payload = self.conn.recv()
        except EOFError:
            code = self.process.exitcode
            self.stop()
            raise LaunchbenchError(f"the GPU worker exited while starting (exit code {code})") from None
        if kind == "error":
            self.stop()
            raise NoGpuError(payload)
        return payload

    def run(self, case: Case, progress: Progress, timeout: float) -> tuple[CaseResult, bool] | None:
        """The case's result and whether the worker is ending, or None when it died or timed out."""
        self.conn.send(case)
        self.timed_out = False
        waited = 0.0
        while True:
            if not self.conn.poll(1.0):
                waited += 1.0
                if not self.process.is_alive() or waited > timeout:
                    self.timed_out = waited > timeout
                    self.stop()
                    return None
                continue
            try:
                kind, payload = self.conn.recv()
            except (EOFError, ConnectionError):
                self.stop()
                return None
            waited = 0.0
            if kind == "progress":
                progress(payload)
            elif kind == "result":
                return payload

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        try:
            if self.process.is_alive():
                self.conn.send(None)
                self.process.join(5)
        except (OSError, ValueError):
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
