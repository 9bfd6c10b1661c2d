"""The worker process that owns the GPU: one case at a time, so a CUDA error that poisons the context
(an out-of-bounds raw kernel, say) fails that case only; the parent starts a fresh worker for the rest.

The messages both ways are launchbench.run.protocol's: the worker imports launchbench, waits for
``StartBackend`` and answers ``Ready`` (or ``StartFailed``) once its backend is up, then each request with any number of ``ProgressReport`` and one answer. A
``MeasureCase`` is measured whole; ``BeginCase``, ``NextRound`` and ``FinishCase`` step a case round by
round; a ``RankTask`` runs one rank of a case on several GPUs, after which the worker ends; a
``MeasureFloor`` measures a floor: block (every layer here but torch's, which run.floor measures in a
process of its own) and ends it too; a
``Result`` whose ``ending`` is true ends the worker too, as does ``StopWorker``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, NoReturn

from launchbench.backend.base import RankInfo
from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import SystemClock
from launchbench.results.schema import CaseResult
from launchbench.run.canary import CanaryWatch, with_canary
from launchbench.run.execute import CaseSession, HarnessCosts, PassContext, failed_case, start_case
from launchbench.run.profile import CaseTimes
from launchbench.run.protocol import (
    BeginCase,
    Booted,
    Failed,
    FinishCase,
    FloorDone,
    MeasureCase,
    MeasureFloor,
    NcclId,
    NextRound,
    Prepared,
    PreviousEnded,
    ProgressReport,
    RankTask,
    Ready,
    Request,
    Result,
    RoundDone,
    StartBackend,
    StartFailed,
    StopWorker,
    run_through,
)
from launchbench.run.worker_start import ProcessState
from launchbench.scenario.core import Case

PROGRESS_STEP = 0.05
CPUS_VARIABLE = "LAUNCHBENCH_WORKER_CPUS"  # a worker started as a program pins itself to these CPUs
NVLS_VARIABLE = "NCCL_NVLS_ENABLE"


def cupy_backend(device: int) -> Any:
    """The real backend (imports CuPy; raises NoGpuError with one sentence when there is no GPU)."""
    from launchbench.backend.gpu_probe import require_gpu

    require_gpu(device)
    from launchbench.backend.cupy_backend import CupyBackend

    return CupyBackend(device, SystemClock())


def _exit_now(code: int = 3) -> NoReturn:
    """Leave without running destructors or the interpreter's teardown: after a CUDA fault they would
    only report the same error again (CuPy's Event.__del__ fails on a poisoned context and prints a
    traceback); once the parent is done with the worker they would only take time (every module torn
    down one by one: some 20 ms at the end of each worker)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


class _ProgressSender:
    """Forwards progress to the parent in steps of PROGRESS_STEP (not on every round)."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.last = 0.0

    def __call__(self, fraction: float) -> None:
        if fraction - self.last >= PROGRESS_STEP or fraction >= 1.0:
            self.last = fraction
            self.conn.send(ProgressReport(fraction))


def _start_backend(
    conn: Connection,
    backend_factory: Callable[[int], Any],
    device: int,
    entered_at: float,
    asked: StartBackend,
) -> tuple[Any, CanaryWatch] | None:
    """The backend and its first canary reading, once the parent has its environment (``Ready``);
    None after ``StartFailed``, or when the parent ends the worker instead of sending ``PreviousEnded``
    (``asked.hold``: the reading waits for it). ``entered_at``: when the main loop began
    (``time.time()``)."""
    begin = time.perf_counter()
    try:
        backend = backend_factory(device)
        made = time.perf_counter()
        if asked.hold and not isinstance(_received(conn), PreviousEnded):
            return None
        released = time.perf_counter()
        watch = CanaryWatch(backend.canary())
        read = time.perf_counter()
        conn.send(Ready(backend.environment(), entered_at, made - begin, read - released))
        return backend, watch
    except LaunchbenchError as err:
        conn.send(StartFailed(str(err)))
    except Exception as err:  # noqa: BLE001 - report, never a traceback at the user
        conn.send(StartFailed(f"the GPU backend failed to start: {type(err).__name__}: {err}"))
    return None


def _received(conn: Connection) -> object:
    """The parent's next message; None when it went away."""
    try:
        return conn.recv()
    except (EOFError, ConnectionError):
        return None


def serve(
    conn: Connection, backend_factory: Callable[[int], Any], device: int, state: ProcessState | None = None
) -> NoReturn:
    """The worker process: the parent's environment, import path, folder and CPUs taken on (``state``;
    a worker forked from the fork server began with the server's), its main loop, then its end (exit
    code 0) once the loop returns."""
    if state is not None:
        state.adopt()
    _serve_requests(conn, backend_factory, device)
    _exit_now(0)


def _serve_requests(conn: Connection, backend_factory: Callable[[int], Any], device: int) -> None:
    """Worker main loop (runs in the child process)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    os.environ[NVLS_VARIABLE] = "0"  # NCCL's NVLink multicast stays off in every worker
    entered_at = time.time()
    try:
        conn.send(Booted())
        asked = conn.recv()  # nothing touches the GPU before the parent asks (StartBackend)
    except (EOFError, ConnectionError):  # the parent went away first (closed, or reset with Booted unread)
        return
    if not isinstance(asked, StartBackend):
        return
    started = _start_backend(conn, backend_factory, device, entered_at, asked)
    if started is None:
        return
    backend, watch = started
    harness = HarnessCosts()  # the process's own timing-loop costs, measured once
    session: CaseSession | None = None
    while True:
        try:
            message: Request = conn.recv()
        except EOFError:
            return
        if isinstance(message, StopWorker | StartBackend):
            return  # a second StartBackend is the parent's mistake: end as on StopWorker
        if isinstance(message, RankTask):
            _serve_rank(conn, backend, message)  # a rank's worker runs its one case, then ends
            return
        if isinstance(message, MeasureFloor):
            _serve_floor(conn, message)  # a floor's worker measures its layers, then ends
            return
        if isinstance(message, MeasureCase):
            _measure(conn, backend, watch, message.case, PassContext(message.spreads, harness))
        else:  # a case sampled round by round, as the parent asks
            session = _step(conn, backend, watch, session, message, harness)


def _measure(conn: Connection, backend: Any, watch: CanaryWatch, case: Case, context: PassContext) -> None:
    """One pass of a case, whole (as execute_case, keeping the session's times)."""
    times: CaseTimes | None = None
    try:
        started = start_case(backend, case, backend.clock, _ProgressSender(conn), context)
        if isinstance(started, CaseResult):
            result = started
        else:
            result, times = run_through(started), started.times
    except Exception as err:  # noqa: BLE001 - the case fails, the run goes on in a fresh worker
        conn.send(Result(failed_case(case, f"{type(err).__name__}: {err}"), True))
        _exit_now()
    _send_result(conn, result, backend, watch, times)


def _serve_rank(conn: Connection, backend: Any, task: RankTask) -> None:
    """One rank of a case on several GPUs: rank 0 first makes the NCCL unique id and sends it to the
    parent, which passes it to the other ranks."""
    from launchbench.run.ranks import execute_rank  # only a rank's worker runs it: the others never load it

    unique_id = task.unique_id
    try:
        if unique_id is None:
            unique_id = backend.nccl_unique_id()
            conn.send(NcclId(unique_id))
        progress = _ProgressSender(conn) if task.rank == 0 else None
        ranks = RankInfo(task.rank, task.world, unique_id)
        result = execute_rank(backend, task.case, backend.clock, ranks, progress)
    except Exception as err:  # noqa: BLE001 - the case fails on every rank: the parent stops them
        result = failed_case(task.case, f"rank {task.rank}: {type(err).__name__}: {err}")
    conn.send(Result(result, True))
    _exit_now()


def _serve_floor(conn: Connection, task: MeasureFloor) -> None:
    """The floor block's cases measured from this process by the measure the task names."""
    try:
        measure: Callable[..., Any] = load_factory(task.measure)  # a run.floor.FloorMeasure
        results = tuple(measure(task.request, task.gpu_address))
    except Exception as err:  # noqa: BLE001 - the floor fails on this side, the run goes on
        conn.send(Failed(f"{type(err).__name__}: {err}"))
        _exit_now()
    conn.send(FloorDone(results))


def _send_result(
    conn: Connection, result: CaseResult, backend: Any, watch: CanaryWatch, times: CaseTimes | None = None
) -> None:
    """Send the result, with the canary read after it. A failed case may have left the CUDA context
    unusable, and a disturbed one left the process in a state a fresh one does not have: the worker then
    ends and the parent starts afresh."""
    restart = (
        bool(result.error)
        and any(m.status == "failed" for m in result.modes.values())
        and result.outputs_match is not False
    )
    if not restart:
        result = with_canary(result, watch.check(backend.canary()))
        restart = result.disturbed_passes > 0
    conn.send(Result(result, restart, times))
    if restart:
        _exit_now()


def _step(
    conn: Connection,
    backend: Any,
    watch: CanaryWatch,
    session: CaseSession | None,
    step: BeginCase | NextRound | FinishCase,
    harness: HarnessCosts,
) -> CaseSession | None:
    """One step of a case sampled round by round: ``BeginCase`` prepares it (with the worker's
    ``harness`` costs, as a ``MeasureCase`` is) and answers ``Prepared`` (or its result when it cannot
    run); ``NextRound`` samples one round and answers ``RoundDone``; ``FinishCase`` answers its result.
    The session the next step continues."""
    case = step.case if isinstance(step, BeginCase) else session.case if session is not None else None
    try:
        if isinstance(step, BeginCase):
            context = PassContext(harness=harness)
            started = start_case(backend, step.case, backend.clock, _ProgressSender(conn), context)
            if isinstance(started, CaseResult):
                _send_result(conn, started, backend, watch)
                return None
            conn.send(Prepared())
            return started
        assert session is not None, f"{type(step).__name__} before BeginCase"
        if isinstance(step, NextRound):
            conn.send(RoundDone(session.round()))
            return session
        _send_result(conn, session.finish(), backend, watch, session.times)
        return None
    except Exception as err:  # noqa: BLE001 - the case fails, the run goes on in a fresh worker
        message = f"{type(err).__name__}: {err}"
        conn.send(Result(failed_case(case, message), True) if case is not None else Failed(message))
        _exit_now()


class BackendSpecError(LaunchbenchError):
    """A backend factory named as "module:function" that cannot be loaded."""


def load_factory(spec: str) -> Callable[[int], Any]:
    """The backend factory named by ``spec``, "module:function" (a function of the device index)."""
    import importlib

    module, sep, name = spec.partition(":")
    if not sep or not module or not name:
        raise BackendSpecError(
            f"backend {spec!r}: give module:function, e.g. launchbench.run.worker:cupy_backend"
        )
    try:
        factory = getattr(importlib.import_module(module), name)
    except ImportError as err:
        raise BackendSpecError(f"backend {spec!r}: cannot import module {module}: {err}") from None
    except AttributeError:
        raise BackendSpecError(f"backend {spec!r}: module {module} has no {name}") from None
    if not callable(factory):
        raise BackendSpecError(f"backend {spec!r}: {module}.{name} is not callable")
    return factory


def main(argv: list[str] | None = None) -> None:
    """A worker started as its own program (``python -m launchbench.run.worker FD FACTORY DEVICE``), by
    a parent that may run another interpreter: FD is the inherited end of a socket pair, FACTORY the
    backend factory as "module:function". With CPUS_VARIABLE set (e.g. "7"), the worker pins itself
    to those CPUs."""
    fd, factory_spec, device = argv if argv is not None else sys.argv[1:]
    serve_program(int(fd), factory_spec, int(device))


def serve_program(fd: int, factory_spec: str, device: int) -> NoReturn:
    """The worker of a program (``main``, or a fork of launchbench.run.program_server): pinned to
    CPUS_VARIABLE's CPUs where it is set, its factory loaded, then ``serve`` on the socket ``fd``."""
    import socket
    from multiprocessing.connection import Connection

    cpus = os.environ.get(CPUS_VARIABLE)
    if cpus:  # pinned before CUDA starts its threads, so they inherit it
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})
    factory = load_factory(factory_spec)
    conn = Connection(socket.socket(fileno=fd).detach())
    serve(conn, factory, device)


if __name__ == "__main__":
    main()
