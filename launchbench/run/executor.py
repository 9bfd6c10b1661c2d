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
from launchbench.run.canary import CanaryWatch, with_canary
from launchbench.run.execute import execute_case, failed_case
from launchbench.run.ranks import RankGroup
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
    """Every case in this process, on one backend (no isolation: a CUDA fault ends the run, and a case
    that disturbs the process is marked but cannot be left behind)."""

    def __init__(self, backend_factory: Callable[[int], Any], device: int):
        self._factory = backend_factory
        self._device = device
        self._backend: Any = None
        self._watch = CanaryWatch(None)

    def start(self) -> dict[str, Any]:
        self._backend = self._factory(self._device)
        self._watch = CanaryWatch(self._backend.canary())
        return self._backend.environment()

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        if case.devices > 1:
            return failed_case(
                case,
                "a case on several GPUs needs a worker process per GPU (drop --no-isolate)",
                kind="input",
            )
        result = execute_case(self._backend, case, self._backend.clock, progress)
        return with_canary(result, self._watch.check(self._backend.canary()))

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
        """``spawn`` starts a worker process (by default one of ``backend_factory`` on ``device``); a
        case on several GPUs gets a worker of ``backend_factory`` per GPU from ``device`` on."""
        self._spawn = spawn or (lambda: WorkerProcess(backend_factory, device))
        self._ranks = RankGroup(lambda rank_device: WorkerProcess(backend_factory, rank_device), device)
        self._worker: WorkerProcess | None = None
        self._pass: int | None = None
        self._case: Case | None = None  # the case begun round by round
        self._progress: Progress = lambda _f: None

    def start(self) -> dict[str, Any]:
        """Start a fresh worker (stopping the one running); the environment it runs on."""
        self.close()
        self._worker = self._spawn()
        return self._worker.start()

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        if case.devices > 1:  # its own worker per rank, fresh for every pass
            return self._ranks.execute(case, progress, case_timeout(case))
        worker = self._worker_for(pass_index)
        timeout = case_timeout(case)
        answer = worker.ask(case, progress, timeout)
        return self._result(case, worker, answer, timeout)

    def begin(self, case: Case, pass_index: int, progress: Progress) -> CaseResult | None:
        """Prepare a case to be sampled round by round (``round``, then ``finish``); None when it is
        ready, its result when it cannot run."""
        if case.devices > 1:
            return failed_case(
                case, "a case on several GPUs is measured by run, not sampled round by round", kind="input"
            )
        worker = self._worker_for(pass_index)
        self._case, self._progress = case, progress
        answer = worker.ask(("begin", case), progress, case_timeout(case))
        if answer is not None and answer[0] == "ready":
            return None
        self._case = None
        return self._result(case, worker, answer, case_timeout(case))

    def round(self) -> bool | CaseResult:
        """One sampling round of the case begun: whether it is done, or its result when it failed."""
        case, worker = self._case, self._worker
        assert case is not None and worker is not None, "round() without begin()"
        answer = worker.ask(("round", None), self._progress, case_timeout(case))
        if answer is not None and answer[0] == "round":
            return bool(answer[1])
        self._case = None
        return self._result(case, worker, answer, case_timeout(case))

    def finish(self) -> CaseResult:
        """The result of the case begun."""
        case, worker = self._case, self._worker
        assert case is not None and worker is not None, "finish() without begin()"
        self._case = None
        answer = worker.ask(("finish", None), self._progress, case_timeout(case))
        return self._result(case, worker, answer, case_timeout(case))

    def _worker_for(self, pass_index: int) -> WorkerProcess:
        if self._pass is not None and pass_index != self._pass:
            self.close()  # every pass in a fresh process: process-level state varies between passes
        self._pass = pass_index
        if self._worker is None or not self._worker.alive():
            self.start()
        assert self._worker is not None
        return self._worker

    def _result(
        self, case: Case, worker: WorkerProcess, answer: tuple[str, Any] | None, timeout: float
    ) -> CaseResult:
        """The case's result from the worker's answer; a failed one when the worker died or timed out."""
        if answer is None:
            self._worker = None
            if worker.timed_out:
                return failed_case(
                    case, f"the case did not finish within {timeout:.0f} s; its worker was stopped"
                )
            why = f"the worker process died (exit code {worker.process.exitcode}) while running this case"
            return failed_case(case, why)
        kind, payload = answer
        if kind == "error":
            self.close()
            return failed_case(case, payload)
        result, ending = payload
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

    def ask(self, message: Any, progress: Progress, timeout: float) -> tuple[str, Any] | None:
        """Send a message (a Case, or a step of a case sampled round by round) and return the answer
        that is not progress: ("result", (CaseResult, ending)), ("ready", None), ("round", done) or
        ("error", text); None when the worker died or timed out."""
        self.conn.send(message)
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
            else:
                return kind, payload

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
