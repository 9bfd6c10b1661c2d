"""Where a case-pass runs: in this process (InProcessExecutor) or in a worker process (WorkerExecutor).

An executor owns what happens around a case: starting the backend, timeouts, a fresh worker process for
every pass (as pyperf spreads a benchmark over processes: what a process happens to get — its CUDA
streams' hardware queues, its memory placement, the core it lands on — then varies between the passes
of one run, where the statistics see it, instead of between runs), and a dead or poisoned worker,
which fails only the case in flight."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from launchbench.errors import LaunchbenchError, NoGpuError
from launchbench.measure.stopping import ModeSpread
from launchbench.results.schema import CaseResult
from launchbench.run.canary import CanaryWatch, with_canary
from launchbench.run.execute import CaseSession, HarnessCosts, PassContext, failed_case, start_case
from launchbench.run.profile import CaseTimes, PassTimes, WorkerStart
from launchbench.run.protocol import (
    Answer,
    BeginCase,
    Booted,
    CasePass,
    Failed,
    FinishCase,
    FloorDone,
    MeasureCase,
    MeasureFloor,
    NextRound,
    Prepared,
    PreviousEnded,
    ProgressReport,
    Ready,
    Request,
    Result,
    RoundDone,
    StartBackend,
    StartFailed,
    StopWorker,
    run_through,
)
from launchbench.run.ranks import RankGroup
from launchbench.run.worker import serve
from launchbench.run.worker_start import ProcessState, worker_context
from launchbench.scenario.core import Case

WORKER_START_TIMEOUT = 180.0
CASE_TIMEOUT_FLOOR = 300.0

Progress = Callable[[float], None]
Spreads = Mapping[str, ModeSpread]


class Executor(Protocol):
    """Runs case-passes: whole (``execute``; a case on several GPUs as one rank per GPU) or round by
    round (``begin``, then the CasePass's rounds and ``finish``), on the backend it starts."""

    def start(self) -> dict[str, Any]:
        """Start the backend; the environment it runs on."""
        ...

    def execute(
        self, case: Case, pass_index: int, progress: Progress, spreads: Spreads | None = None
    ) -> CaseResult:
        """One pass of one case (its settings already those of one pass; ``spreads``: its modes' spread
        between their earlier passes, for the stopping rule); a failure becomes a result."""
        ...

    def begin(self, case: Case, pass_index: int, progress: Progress) -> CasePass | CaseResult:
        """Prepare one pass of one case to be sampled round by round; its result instead when it
        cannot run."""
        ...

    def next_pass(self, pass_index: int, then: int | None = None) -> None:
        """The current pass is over and pass ``pass_index`` follows (and pass ``then`` after it, where
        the schedule holds one): prepare what it runs in."""
        ...

    def release(self) -> None:
        """Ask every worker to end, without waiting for them (``close`` waits): the run's last record
        is written while they let go of their CUDA contexts."""
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
        self._harness = HarnessCosts()

    def start(self) -> dict[str, Any]:
        self._backend = self._factory(self._device)
        self._watch = CanaryWatch(self._backend.canary())
        return self._backend.environment()

    def execute(
        self, case: Case, pass_index: int, progress: Progress, spreads: Spreads | None = None
    ) -> CaseResult:
        started = self.begin(case, pass_index, progress, spreads)
        return started if isinstance(started, CaseResult) else run_through(started)

    @property
    def last_times(self) -> PassTimes | None:
        return PassTimes(case=self._last.times) if self._last is not None else None

    def begin(
        self, case: Case, pass_index: int, progress: Progress, spreads: Spreads | None = None
    ) -> CasePass | CaseResult:
        self._last = None
        if case.devices > 1:
            return failed_case(
                case,
                "a case on several GPUs needs a worker process per GPU (drop --no-isolate)",
                kind="input",
            )
        context = PassContext(spreads or {}, self._harness)
        started = start_case(self._backend, case, self._backend.clock, progress, context)
        if isinstance(started, CaseResult):
            return self._checked(started)
        self._last = _CheckedPass(started, self._checked)
        return self._last

    def _checked(self, result: CaseResult) -> CaseResult:
        return with_canary(result, self._watch.check(self._backend.canary()))

    def next_pass(self, pass_index: int, then: int | None = None) -> None:
        return None  # every pass runs in this process

    def release(self) -> None:
        return None

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
        self._first: WorkerProcess | None = None  # spawned and asked to start by spawn_first
        self._spawning: threading.Thread | None = None  # spawn_first's, until start or close joins it
        self._pass: int | None = None
        self._started: WorkerStart | None = None  # the start of the worker the next case-pass runs in
        self._next: WorkerProcess | None = None  # spawned for the next pass, its backend not started
        self._ahead: WorkerProcess | None = None  # spawned for the pass after it: imported, then idle
        self._times: PassTimes | None = None

    def spawn_first(self) -> None:
        """Spawn the run's first worker and ask it to start its backend, in a thread of this process
        (the spawn waits for the fork server's imports), so what the parent does before its first case
        overlaps the worker's imports and CUDA context; ``start`` waits for it (and spawns one itself
        where this one could not be)."""
        if self._spawning is None:
            self._spawning = threading.Thread(target=self._spawn_first, name="launchbench-first-worker")
            self._spawning.start()

    def _spawn_first(self) -> None:
        with contextlib.suppress(Exception):  # start spawns its own, which says what is wrong
            worker = self._spawn()
            worker.ask_start()
            self._first = worker

    def _first_spawned(self) -> WorkerProcess | None:
        """The worker ``spawn_first`` began (None where it did not), once its spawn is over."""
        if self._spawning is not None:
            self._spawning.join()
            self._spawning = None
        first, self._first = self._first, None
        return first

    def start(self) -> dict[str, Any]:
        """Start a fresh worker (stopping the one running; the one ``spawn_first`` began, if any, is
        kept); the environment it runs on."""
        first = self._first_spawned()
        self.close()
        self._worker = first or self._spawn()
        return self._ready(self._worker)

    def _ready(self, worker: WorkerProcess) -> dict[str, Any]:
        """Start a spawned worker's backend; the environment it runs on."""
        self._next = None
        environment = worker.start()
        self._started = worker.start_times
        return environment

    def next_pass(self, pass_index: int, then: int | None = None) -> None:
        """Stop this pass's worker and ready the one pass ``pass_index`` runs in, between the passes,
        while nothing is measured: that one was spawned a pass ahead and has imported launchbench (or is
        spawned now), and starts its backend (the CUDA context, NVML) while the old one ends, taking its
        first canary reading once the old one has ended; the parent meanwhile does what it does
        between passes (the tables, the host-level fits). Where a pass ``then`` may follow, its worker
        is spawned now, to import meanwhile; the pass's first case waits for the new worker's Ready and
        for that one's imports to be done, so no import loads the host while a case is measured; it then
        sits idle, holding no GPU context."""
        ending, self._worker = self._worker, None
        if self._next is not None:
            self._next.stop()
        self._next, self._ahead = self._ahead or self._spawn(), None
        if ending is None:
            self._next.ask_start()
        else:
            self._next.start_after(ending)
        self._ahead = self._spawn() if then is not None else None
        self._pass = pass_index

    def execute(
        self, case: Case, pass_index: int, progress: Progress, spreads: Spreads | None = None
    ) -> CaseResult:
        self._times = None
        if case.devices > 1:  # its own worker per rank, fresh for every pass
            return self._ranks.execute(case, progress, case_timeout(case))
        worker = self._worker_for(pass_index)
        answer = worker.ask(MeasureCase(case, spreads or {}), progress, case_timeout(case))
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
        if self._next is not None:
            self._worker = self._next
            self._ready(self._worker)
            if self._ahead is not None and not self._ahead.booted():
                self._ahead.stop()
                self._ahead = None
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

    def measure_floor(self, task: MeasureFloor, progress: Progress) -> FloorDone | Failed:
        """A floor block measured whole in a fresh worker, which ends after it (the floor's layers
        leave the process in a state no case starts from); Failed, saying why, when it could not."""
        self._times = None
        self.start()
        worker = self._worker
        assert worker is not None
        timeout = max(CASE_TIMEOUT_FLOOR, 5 * task.request.spec.max_time + 60)
        try:
            answer = worker.ask(task, progress, timeout)
        finally:
            self.close()
        if isinstance(answer, FloorDone | Failed):
            return answer
        if answer is None and worker.timed_out:
            return Failed(f"the floor did not finish within {timeout:.0f} s; its worker was stopped")
        if answer is None:
            return Failed(
                f"the worker process died (exit code {worker.process.exitcode}) measuring the floor"
            )
        return Failed(f"the worker answered {answer}")

    @property
    def last_times(self) -> PassTimes | None:
        return self._times

    def release(self) -> None:
        for worker in (self._worker, self._next, self._ahead):
            if worker is not None:
                worker.ask_stop()

    def close(self) -> None:
        first = self._first_spawned()
        for worker in (self._worker, self._next, self._ahead, first):
            if worker is not None:
                worker.stop()
        self._worker = self._next = self._ahead = None


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
    _asked = False  # StartBackend sent
    _stop_asked = False  # StopWorker sent
    _booted = False  # its Booted received (by ``booted``)

    def __init__(self, factory: Callable[[int], Any], device: int):
        ctx = worker_context()
        self.mark_spawn()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=serve, args=(child, factory, device, ProcessState.current()), daemon=True
        )
        self.process.start()
        child.close()
        self.timed_out = False

    def ask_start(self) -> None:
        """Ask the worker to start its backend once its imports are done (``start`` waits for it)."""
        self._send_start(StartBackend())

    def start_after(self, ending: WorkerProcess) -> None:
        """Ask the worker to start its backend while ``ending`` ends (asked to here, then waited for):
        the old one's CUDA context is let go while the new one's is made, and the new one takes its
        first canary reading only once the old one has ended (``start`` waits for it)."""
        ending.ask_stop()
        held = self._send_start(StartBackend(hold=True))
        ending.stop()
        if held:  # one asked before without hold reads its reference by itself
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(PreviousEnded())

    def _send_start(self, message: StartBackend) -> bool:
        """Send ``message`` unless a StartBackend was sent before; whether it was sent now."""
        if self._asked:
            return False
        self._asked = True
        with contextlib.suppress(OSError, ValueError):  # a worker that exited: its code is read in start
            self.conn.send(message)
        return True

    def start(self) -> dict[str, Any]:
        """Wait for the worker's backend (asking for it, unless ``ask_start`` did; the worker has been
        importing since its spawn); the environment it runs on."""
        asked = time.perf_counter()
        self.ask_start()
        answer = self._next_answer()
        if isinstance(answer, Booted):  # not taken by ``booted``: the answer after it
            answer = self._next_answer()
        if isinstance(answer, StartFailed):
            self.stop()
            raise NoGpuError(answer.message)
        assert isinstance(answer, Ready), f"the worker started with {answer!r}"
        boot = max(0.0, answer.entered_at - self._spawned_at)
        ready = time.perf_counter() - asked
        self.start_times = WorkerStart(boot, answer.backend_s, answer.canary_s, ready)
        return answer.environment

    def _next_answer(self) -> object:
        if not self.conn.poll(WORKER_START_TIMEOUT):
            self.stop()
            raise LaunchbenchError("the GPU worker did not start within 3 minutes")
        try:
            return self.conn.recv()
        except EOFError:
            code = self.process.exitcode
            self.stop()
            raise LaunchbenchError(f"the GPU worker exited while starting (exit code {code})") from None

    def booted(self) -> bool:
        """Wait until the worker has imported what it runs (its Booted); False when it exited first.
        Only before ``ask_start``: the answer after Booted is the backend's."""
        if self._booted:
            return True
        try:
            self._booted = self.conn.poll(WORKER_START_TIMEOUT) and isinstance(self.conn.recv(), Booted)
        except (EOFError, OSError):
            self._booted = False
        return self._booted

    def mark_spawn(self) -> None:
        """Note the moment the worker is spawned (for ``start_times``)."""
        self._spawned_at = time.time()

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

    def ask_stop(self) -> None:
        """Ask the worker to end, without waiting for it (``stop`` waits)."""
        if self._stop_asked:
            return
        self._stop_asked = True
        with contextlib.suppress(OSError, ValueError):
            if self.process.is_alive():
                self.conn.send(StopWorker())

    def stop(self) -> None:
        try:
            if self.process.is_alive():
                self.ask_stop()
                self.process.join(5)
        except (OSError, ValueError):
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self.conn.close()
