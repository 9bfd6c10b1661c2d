"""Where a case-pass runs: in this process (InProcessExecutor) or in a worker process (WorkerExecutor).

An executor owns what happens around a case: starting the backend, timeouts, a fresh worker process for
every pass (as pyperf spreads a benchmark over processes: what a process happens to get — its CUDA
streams' hardware queues, its memory placement, the core it lands on — then varies between the passes
of one run, where the statistics see it, instead of between runs), and a dead or poisoned worker,
which fails only the case in flight."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from typing import Any, Protocol

from launchbench.errors import LaunchbenchError, NoGpuError
from launchbench.results.schema import CaseResult
from launchbench.run.canary import CanaryWatch, with_canary
from launchbench.run.execute import CaseSession, failed_case, start_case
from launchbench.run.profile import CaseTimes, PassTimes, WorkerStart
from launchbench.run.protocol import (
    Answer,
    BeginCase,
    CasePass,
    Failed,
    FinishCase,
    MeasureCase,
    NextRound,
    Prepared,
    ProgressReport,
    Ready,
    Request,
    Result,
    RoundDone,
    StartFailed,
    StopWorker,
    run_through,
)
from launchbench.run.ranks import RankGroup
from launchbench.run.worker import serve
from launchbench.scenario.core import Case

WORKER_START_TIMEOUT = 180.0
CASE_TIMEOUT_FLOOR = 300.0

Progress = Callable[[float], None]


class Executor(Protocol):
    """Runs case-passes: whole (``execute``; a case on several GPUs as one rank per GPU) or round by
    round (``begin``, then the CasePass's rounds and ``finish``), on the backend it starts."""

    def start(self) -> dict[str, Any]:
        """Start the backend; the environment it runs on."""
        ...

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        """One pass of one case (its settings already those of one pass); a failure becomes a result."""
        ...

    def begin(self, case: Case, pass_index: int, progress: Progress) -> CasePass | CaseResult:
        """Prepare one pass of one case to be sampled round by round; its result instead when it
        cannot run."""
        ...

    def close(self) -> None: ...

    @property
    def last_times(self) -> PassTimes | None:
        """Where the last case-pass's time went (a worker's start, the case's phases), where known."""
        ...


class _CheckedPass:
    """A case-pass whose result gets the canary check read after it (CasePass)."""

    def __init__(self, inner: CaseSession, checked: Callable[[CaseResult], CaseResult]):
        self.inner, self.checked = inner, checked

    @property
    def done(self) -> bool:
        return self.inner.done

    def round(self) -> bool:
        return self.inner.round()

    def finish(self) -> CaseResult:
        return self.checked(self.inner.finish())

    @property
    def times(self) -> CaseTimes:
        return self.inner.times

    def close(self) -> None:
        self.inner.close()


class InProcessExecutor:
    """Every case in this process, on one backend (no isolation: a CUDA fault ends the run, and a case
    that disturbs the process is marked but cannot be left behind)."""

    def __init__(self, backend_factory: Callable[[int], Any], device: int):
        self._factory = backend_factory
        self._device = device
        self._backend: Any = None
        self._watch = CanaryWatch(None)
        self._last: _CheckedPass | None = None

    def start(self) -> dict[str, Any]:
        self._backend = self._factory(self._device)
        self._watch = CanaryWatch(self._backend.canary())
        return self._backend.environment()

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        started = self.begin(case, pass_index, progress)
        return started if isinstance(started, CaseResult) else run_through(started)

    @property
    def last_times(self) -> PassTimes | None:
        return PassTimes(case=self._last.times) if self._last is not None else None

    def begin(self, case: Case, pass_index: int, progress: Progress) -> CasePass | CaseResult:
        self._last = None
        if case.devices > 1:
            return failed_case(
                case,
                "a case on several GPUs needs a worker process per GPU (drop --no-isolate)",
                kind="input",
            )
        started = start_case(self._backend, case, self._backend.clock, progress)
        if isinstance(started, CaseResult):
            return self._checked(started)
        self._last = _CheckedPass(started, self._checked)
        return self._last

    def _checked(self, result: CaseResult) -> CaseResult:
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
        self._started: WorkerStart | None = None  # the start of the worker the next case-pass runs in
        self._times: PassTimes | None = None

    def start(self) -> dict[str, Any]:
        """Start a fresh worker (stopping the one running); the environment it runs on."""
        self.close()
        self._worker = self._spawn()
        environment = self._worker.start()
        self._started = self._worker.start_times
        return environment

    def execute(self, case: Case, pass_index: int, progress: Progress) -> CaseResult:
        self._times = None
        if case.devices > 1:  # its own worker per rank, fresh for every pass
            return self._ranks.execute(case, progress, case_timeout(case))
        worker = self._worker_for(pass_index)
        answer = worker.ask(MeasureCase(case), progress, case_timeout(case))
        return self.result(case, worker, answer)

    def begin(self, case: Case, pass_index: int, progress: Progress) -> RemotePass | CaseResult:
        """Prepare a case in the worker to be sampled round by round; its result when it cannot run."""
        self._times = None
        if case.devices > 1:
            return failed_case(
                case, "a case on several GPUs is measured by run, not sampled round by round", kind="input"
            )
        worker = self._worker_for(pass_index)
        answer = worker.ask(BeginCase(case), progress, case_timeout(case))
        if isinstance(answer, Prepared):
            return RemotePass(self, worker, case, progress)
        return self.result(case, worker, answer)

    def _worker_for(self, pass_index: int) -> WorkerProcess:
        if self._pass is not None and pass_index != self._pass:
            self.close()  # every pass in a fresh process: process-level state varies between passes
        self._pass = pass_index
        if self._worker is None or not self._worker.alive():
            self.start()
        assert self._worker is not None
        return self._worker

    def result(self, case: Case, worker: WorkerProcess, answer: Answer | None) -> CaseResult:
        """The case's result from the worker's answer; a failed one when the worker died or timed out."""
        if answer is None:
            self._worker = None
            if worker.timed_out:
                return failed_case(
                    case,
                    f"the case did not finish within {case_timeout(case):.0f} s; its worker was stopped",
                )
            why = f"the worker process died (exit code {worker.process.exitcode}) while running this case"
            return failed_case(case, why)
        if not isinstance(answer, Result):
            self.close()
            why = answer.message if isinstance(answer, Failed) else f"the worker answered {answer}"
            return failed_case(case, why)
        self._times = PassTimes(self._started, answer.times)
        self._started = None
        if answer.ending:
            self.close()
        return answer.result

    @property
    def last_times(self) -> PassTimes | None:
        return self._times

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class RemotePass:
    """A case begun in a worker process, stepped round by round over its pipe (CasePass). A step that
    fails ends it: ``failure`` holds the failed result, which ``finish`` returns without asking."""

    def __init__(self, executor: WorkerExecutor, worker: WorkerProcess, case: Case, progress: Progress):
        self.executor, self.worker, self.case, self.progress = executor, worker, case, progress
        self.failure: CaseResult | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def _ask(self, request: Request) -> Answer | None:
        return self.worker.ask(request, self.progress, case_timeout(self.case))

    def round(self) -> bool:
        answer = self._ask(NextRound())
        if isinstance(answer, RoundDone):
            self._done = answer.done
        else:
            self.failure = self.executor.result(self.case, self.worker, answer)
            self._done = True
        return self._done

    def finish(self) -> CaseResult:
        if self.failure is not None:
            return self.failure
        return self.executor.result(self.case, self.worker, self._ask(FinishCase()))

    def close(self) -> None:
        self.executor.close()


class WorkerProcess:
    """A spawned worker process (worker.serve) and its pipe; ``conn``, ``process`` (is_alive, exitcode,
    join, kill) and ``timed_out`` are what the methods use, so a worker started otherwise can derive."""

    start_times: WorkerStart | None = None

    def __init__(self, factory: Callable[[int], Any], device: int):
        ctx = multiprocessing.get_context("spawn")
        self.mark_spawn()
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
            answer = self.conn.recv()
        except EOFError:
            code = self.process.exitcode
            self.stop()
            raise LaunchbenchError(f"the GPU worker exited while starting (exit code {code})") from None
        if isinstance(answer, StartFailed):
            self.stop()
            raise NoGpuError(answer.message)
        assert isinstance(answer, Ready), f"the worker started with {answer!r}"
        boot = max(0.0, answer.entered_at - self._spawned_at)
        ready = time.perf_counter() - self._spawned
        self.start_times = WorkerStart(boot, answer.backend_s, answer.canary_s, ready)
        return answer.environment

    def mark_spawn(self) -> None:
        """Note the moment the worker is spawned (for ``start_times``)."""
        self._spawned_at, self._spawned = time.time(), time.perf_counter()

    def ask(self, message: Request, progress: Progress, timeout: float) -> Answer | None:
        """Send a request and return the answer that is not progress (protocol.Answer); None when the
        worker died or timed out."""
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
                answer = self.conn.recv()
            except (EOFError, ConnectionError):
                self.stop()
                return None
            waited = 0.0
            if isinstance(answer, ProgressReport):
                progress(answer.fraction)
            else:
                return answer

    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self) -> None:
        try:
            if self.process.is_alive():
                self.conn.send(StopWorker())
                self.process.join(5)
        except (OSError, ValueError):
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
