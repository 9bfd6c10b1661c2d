"""Paired A/B runs on one GPU: two variants of the same cases, measured interleaved.

A variant is what CI has for a base and a pull request: a Python interpreter (a virtualenv with another
CuPy), extra import paths (another checkout of the user's ``python`` step modules), environment
variables, and optionally its own scenario files with the same case ids. Each variant runs in its own
worker processes, with its interpreter and THIS launchbench's source directory first on its path (so
both sides run the same measurement code), then the variant's paths: each one a fork of the side's
program server (launchbench.run.program_server, started once with that interpreter and environment, its
imports done), or, where the platform cannot fork, spawned as ``python -m launchbench.run.worker``.

Order: pass by pass, case by case. In pass k, both sides prepare case i in their own workers (A first
when i + k is even, B first otherwise), then sample it in turns of one sampling round each (a few
milliseconds of every mode), A B B A …, until both are done: the two sides' samples of a pass come
from the same seconds, so a host that changes speed within seconds slows both alike. Every pass starts
fresh workers on both sides. Both sides' workers are pinned to the same CPU (by default): a
thread that moves between cores of different speed (a VM's vCPUs) otherwise puts one side of a round
on a fast core and the other on a slow one. Each side's results are an ordinary run directory (results.json
after every case, the tables as passes end) whose settings' ``ab`` entry names its side, its variant,
the other side's directory and the invocation's id (the same on both sides: the history pairs them by it);
launchbench.analysis.compare.compare_paired pairs them. A scenario's floor: block is measured after
each pass's cases, whole, in one fresh worker per side (run.ab_floor), its layers cases of both sides.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import AbSettings, Settings
from launchbench.results.schema import CaseResult, RunRecord
from launchbench.results.store import create_run_dir, refuse_used_run_dir
from launchbench.run.ab_floor import FloorPair, failed_before, measure_floor_round, paired_floors
from launchbench.run.child_env import source_first
from launchbench.run.executor import RemotePass, WorkerExecutor, WorkerProcess
from launchbench.run.floor import measure_in_process
from launchbench.run.program_server import ProgramServer, platform_can_serve
from launchbench.run.runner import Plan
from launchbench.run.session import (
    RunEvents,
    RunOptions,
    RunSession,
    SilentEvents,
    new_record,
    pass_settings,
)
from launchbench.run.worker import CPUS_VARIABLE
from launchbench.scenario.core import Case

SIDES = ("A", "B")


class VariantError(LaunchbenchError):
    """A --a/--b variant that cannot be used."""


@dataclass(frozen=True)
class Variant:
    """How one side runs: interpreter, extra import paths, environment, its own scenario files."""

    python: str | None = None
    paths: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    scenarios: tuple[str, ...] = ()

    @property
    def interpreter(self) -> str:
        return self.python or sys.executable

    def describe(self) -> dict[str, Any]:
        return {
            "python": self.interpreter,
            "paths": list(self.paths),
            "env": dict(self.env),
            "scenarios": list(self.scenarios),
        }


VARIANT_KEYS = ("python", "path", "env", "scenario")


def parse_variant(text: str) -> Variant:
    """``python=../base/.venv/bin/python,path=../base/src,env=CUPY_ACCELERATORS=cub,scenario=x.yaml``:
    comma-separated KEY=VALUE items; path, env and scenario may repeat; an empty text is the default."""
    python: str | None = None
    paths: list[str] = []
    env: dict[str, str] = {}
    scenarios: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or key not in VARIANT_KEYS or not value:
            raise VariantError(
                f"variant {text!r}: {item!r} is not one of {', '.join(k + '=…' for k in VARIANT_KEYS)}"
            )
        if key == "python":
            python = value
        elif key == "path":
            paths.extend(p for p in value.split(os.pathsep) if p)
        elif key == "scenario":
            scenarios.append(value)
        else:
            name, eq, setting = value.partition("=")
            if not eq or not name:
                raise VariantError(f"variant {text!r}: env={value!r} must be env=NAME=VALUE")
            env[name] = setting
    if python is not None and not (Path(python).is_file() and os.access(python, os.X_OK)):
        raise VariantError(f"variant {text!r}: python={python} is not an executable file")
    for path in paths:
        if not Path(path).is_dir():
            raise VariantError(f"variant {text!r}: path={path} is not a directory")
    return Variant(python, tuple(paths), env, tuple(scenarios))


class _Child:
    """A worker started as a program (subprocess.Popen) with the interface WorkerProcess uses."""

    def __init__(self, popen: subprocess.Popen[bytes]):
        self.popen = popen

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def join(self, timeout: float) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout)

    def kill(self) -> None:
        self.popen.kill()


def factory_spec(factory: Callable[..., Any]) -> str:
    """ "module:function" of a backend factory (or a floor measure), for a worker started as a program."""
    return f"{factory.__module__}:{factory.__qualname__}"


def child_environment(variant: Variant) -> dict[str, str]:
    """The worker's environment: this launchbench's source first on PYTHONPATH, then the variant's
    paths, then what PYTHONPATH held; the variant's variables over the current ones."""
    return source_first(variant.paths, variant.env)


def worker_environment(variant: Variant, cpus: tuple[int, ...] = ()) -> dict[str, str]:
    """A worker's environment (child_environment) with the CPUs it pins itself to, where given."""
    env = child_environment(variant)
    if cpus:
        env[CPUS_VARIABLE] = ",".join(map(str, cpus))
    return env


class VariantWorker(WorkerProcess):
    """A worker process of one variant: its interpreter, its paths and environment, over a socket pair;
    forked by ``server`` (a ProgramServer of the same variant: OSError where it cannot) or spawned as
    ``python -m launchbench.run.worker``."""

    def __init__(
        self,
        variant: Variant,
        factory: Callable[[int], Any],
        device: int,
        cpus: tuple[int, ...] = (),
        server: ProgramServer | None = None,
    ):
        self.mark_spawn()
        self.timed_out = False
        if server is not None:
            self.conn, self.process = server.fork(device)  # type: ignore[assignment]
            return
        parent, child = socket.socketpair()
        command = [
            variant.interpreter,
            "-m",
            "launchbench.run.worker",
            str(child.fileno()),
            factory_spec(factory),
            str(device),
        ]
        try:
            popen = subprocess.Popen(
                command,
                env=worker_environment(variant, cpus),
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        except OSError as err:
            parent.close()
            raise VariantError(f"cannot start {shlex.join(command[:3])}: {err}") from None
        finally:
            child.close()
        self.conn = Connection(parent.detach())
        self.process = _Child(popen)  # type: ignore[assignment]


class VariantWorkers:
    """One side's workers (a WorkerExecutor's ``spawn``): forked from a ProgramServer of the variant,
    started with the first worker, where the platform can fork; spawned as programs where it cannot, or
    once the server failed to start one. ``close`` ends the server."""

    def __init__(
        self, variant: Variant, factory: Callable[[int], Any], device: int, cpus: tuple[int, ...] = ()
    ):
        self.variant, self.factory, self.device, self.cpus = variant, factory, device, cpus
        self._server: ProgramServer | None = None
        self._forking = platform_can_serve()
        self._starting = threading.Lock()

    def __call__(self) -> VariantWorker:
        return self.on(self.device)

    def on(self, device: int) -> VariantWorker:
        """A worker of the variant on ``device`` (the side's own, or another: ab --devices probes every
        device from one server); safe to call from several threads."""
        server = self._running_server()
        if server is not None:
            try:
                return VariantWorker(self.variant, self.factory, device, self.cpus, server)
            except OSError:  # the server ended or did not answer: spawned from now on
                self._forking = False  # before close: another thread must not start a server again
                self.close()
        return VariantWorker(self.variant, self.factory, device, self.cpus)

    def _running_server(self) -> ProgramServer | None:
        with self._starting:
            if self._server is None and self._forking:
                env = worker_environment(self.variant, self.cpus)
                try:
                    self._server = ProgramServer(self.variant.interpreter, env, factory_spec(self.factory))
                except OSError:
                    self._forking = False
            return self._server

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None


@dataclass(frozen=True)
class Side:
    """One variant's plan and run directory."""

    name: str
    variant: Variant
    plan: Plan
    run_dir: Path


def paired_cases(a: Plan, b: Plan) -> list[tuple[Case, Case]]:
    """The cases of both plans matched on (scenario, case id), in A's order; LaunchbenchError when
    the two sides do not hold the same cases."""
    b_cases = {(c.scenario, c.case_id): c for c in b.cases}
    a_keys = [(c.scenario, c.case_id) for c in a.cases]
    only_a = [k for k in a_keys if k not in b_cases]
    only_b = [k for k in b_cases if k not in set(a_keys)]
    if only_a or only_b:
        first = (only_a or only_b)[0]
        side = "A" if only_a else "B"
        raise LaunchbenchError(
            f"the variants' scenarios must hold the same cases; only {side} has {first[0]}/{first[1]}"
            f" ({len(only_a)} case(s) only in A, {len(only_b)} only in B)"
        )
    return [(case, b_cases[key]) for case, key in zip(a.cases, a_keys)]


def round_order(case_index: int, pass_index: int) -> tuple[int, int]:
    """(0, 1) for A then B, (1, 0) for B then A: alternating over cases and over passes."""
    return (0, 1) if (case_index + pass_index) % 2 == 0 else (1, 0)


def floor_schedule(floors: Sequence[FloorPair], round_index: int) -> list[tuple[int, int]]:
    """(floor block index, side) in measuring order in round ``round_index``, after its cases."""
    return [
        (j, side)
        for j, pair in enumerate(floors)
        for side in round_order(j, round_index)
        if pair.measures(side, round_index)
    ]


def ab_schedule(pairs: Sequence[tuple[Case, Case]]) -> list[tuple[int, int, int]]:
    """(pass index, case index, side) in measuring order."""
    passes = max((max(a.measure.passes, b.measure.passes) for a, b in pairs), default=0)
    out = []
    for k in range(passes):
        for i, cases in enumerate(pairs):
            for side in round_order(i, k):
                if k < cases[side].measure.passes:
                    out.append((k, i, side))
    return out


def default_cpus() -> tuple[int, ...]:
    """One CPU for both sides' workers: the highest this process may use (away from CPU 0, where a
    host tends to take its interrupts)."""
    return (max(os.sched_getaffinity(0)),)


def shown_cpus(cpus: Iterable[int]) -> str:
    """CPU numbers for a message: the first 16 in order, then an ellipsis."""
    listed = sorted(cpus)
    return ", ".join(map(str, listed[:16])) + (", …" if len(listed) > 16 else "")


def chosen_cpus(text: str) -> tuple[int, ...]:
    """``--cpu``: a CPU number this process may use (os.sched_getaffinity), ``auto`` (default_cpus) or
    ``none`` (no pinning); a VariantError names the CPUs allowed."""
    if text == "auto":
        return default_cpus()
    if text == "none":
        return ()
    allowed = os.sched_getaffinity(0)
    if not text.isdigit() or int(text) not in allowed:
        raise VariantError(
            f"--cpu {text}: give auto, none or a CPU this process may use ({shown_cpus(allowed)})"
        )
    return (int(text),)


READY = "launchbench worker importable"
INTERPRETER_CHECK_S = 120.0


def check_interpreter(variant: Variant) -> None:
    """Before any worker starts: the variant's interpreter is a Python that imports this launchbench's
    worker with the variant's paths and environment (its output is captured, never shown); a
    VariantError says what it printed last otherwise."""
    if variant.python is None:
        return
    code = f"import sys, launchbench.run.worker; sys.stdout.write({READY!r})"
    command = [variant.python, "-c", code]
    try:
        done = subprocess.run(
            command,
            env=child_environment(variant),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=INTERPRETER_CHECK_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise VariantError(
            f"python={variant.python}: cannot run it as a Python interpreter ({err})"
        ) from None
    if done.returncode == 0 and done.stdout == READY.encode():
        return
    said = (done.stderr or done.stdout).decode("utf-8", "replace").strip().splitlines()
    last = said[-1][:200] if said else "nothing"
    raise VariantError(
        f"python={variant.python}: not a Python that can import launchbench's worker "
        f"(exit {done.returncode}; it said: {last!r})"
    )


class _SideState:
    """One side's executor (its variant's workers, pinned to ``cpus``) and, once started, its session."""

    def __init__(self, side: Side, options: RunOptions, cpus: tuple[int, ...]):
        self.side, self.options = side, options
        self.workers = VariantWorkers(side.variant, options.backend_factory, options.device, cpus)
        self.executor = WorkerExecutor(options.backend_factory, options.device, spawn=self.workers)
        self._session: RunSession | None = None

    def close(self) -> None:
        """Stop the side's worker and end its program server."""
        self.executor.close()
        self.workers.close()

    @property
    def session(self) -> RunSession:
        assert self._session is not None, "the side's session has not started"
        return self._session

    def start_session(
        self, environment: dict[str, Any], settings: Settings, argv: Sequence[str] | None
    ) -> None:
        record = new_record(environment, self.side.plan.scenarios, settings, argv)
        self._session = RunSession(
            self.side.run_dir, record, self.options.write_tables, pacing=self.options.tables_pacing
        )

    def begin(self, case: Case, pass_index: int, events: RunEvents) -> RemotePass | CaseResult:
        """Prepare the case in this side's worker, or its result when it cannot run."""
        return self.executor.begin(pass_settings(case), pass_index, events.case_progress)

    def measure_floor(self, pair: FloorPair, round_index: int, events: RunEvents) -> None:
        """This side's round of a floor block, in a fresh worker of its variant, into its session; a
        failure said as it comes (the layers measured are said by the comparison)."""
        request = pair.requests[SIDES.index(self.side.name)]
        if failed_before(self.session, request):
            return
        measure = factory_spec(self.options.floor or measure_in_process)
        merged = measure_floor_round(
            self.executor, self.session, request, round_index, measure, events.case_progress
        )
        for result in merged:
            if result.error:
                events.case_finished(result)


@dataclass(frozen=True)
class _Slot:
    """One case of one pass in the schedule: both sides' cases, the sides measuring it (in the order
    they begin), the pass, and where it stands in the schedule (the index of its first side, of how
    many)."""

    cases: tuple[Case, Case]
    sides: Sequence[int]
    pass_index: int
    first: int
    total: int


def _begin_sides(
    states: Sequence[_SideState], slot: _Slot, events: RunEvents
) -> tuple[dict[int, RemotePass], dict[int, CaseResult]]:
    """Each side prepares its case in its own worker: the case-passes of the sides ready to sample (in
    the order given), and the results of those whose case cannot run. A side whose case failed earlier
    in the run is skipped."""
    results: dict[int, CaseResult] = {}
    begun: dict[int, RemotePass] = {}
    for n, side in enumerate(slot.sides):
        state, case = states[side], slot.cases[side]
        if state.session.failed_before(case):
            continue
        events.case_started(case, slot.first + n, slot.total)
        early = state.begin(case, slot.pass_index, events)
        if isinstance(early, CaseResult):
            results[side] = early
        else:
            begun[side] = early
    return begun, results


def _measure_round(states: Sequence[_SideState], slot: _Slot, events: RunEvents) -> dict[int, CaseResult]:
    """One round of one case: both sides prepare it in their own workers, then sample it round by
    round in turn (A B B A …, starting with the side this round's order puts first) until both are
    done, so that both sides' samples come from the same seconds of the host's life (a side done first
    samples on beside the other). A side whose case failed earlier in the run is skipped; a side whose
    case fails now leaves the other to go on alone."""
    begun, results = _begin_sides(states, slot, events)
    active = list(begun)
    turn = 0
    while active and not all(begun[side].done for side in active):
        for side in active if turn % 2 == 0 else active[::-1]:
            begun[side].round()
            failure = begun[side].failure
            if failure is not None:
                results[side] = failure
        active = [side for side in active if side not in results]
        turn += 1
    for side in active:
        results[side] = begun[side].finish()
    return results


def _ab_settings(
    options: RunOptions, sides: tuple[Side, Side], n: int, ab_id: str, cpus: tuple[int, ...]
) -> Settings:
    """Side ``n``'s recorded settings: the overrides, the device and its ``ab`` entry."""
    side = sides[n]
    return Settings(
        overrides=options.overrides,
        isolate=True,
        device=options.device,
        ab=AbSettings(
            id=ab_id,
            side=side.name,
            variant=side.variant.describe(),
            paired_with=str(sides[1 - n].run_dir),
            cpus=list(cpus),
        ),
    )


def _started_sides(
    sides: tuple[Side, Side], options: RunOptions, argv: Sequence[str] | None, cpus: tuple[int, ...]
) -> tuple[list[_SideState], list[dict[str, Any]]]:
    """Both sides' first workers started, their run directories made and their sessions begun; the
    environments the workers report."""
    for side in sides:
        refuse_used_run_dir(side.run_dir)
    states = [_SideState(side, options, cpus) for side in sides]
    try:
        environments = [state.executor.start() for state in states]
        for side in sides:
            create_run_dir(side.run_dir)
    except BaseException:
        for state in states:
            state.close()
        raise
    ab_id = uuid.uuid4().hex[:12]  # both sides carry it: the history pairs them by it
    for n, (state, environment) in enumerate(zip(states, environments)):
        state.start_session(environment, _ab_settings(options, sides, n, ab_id, cpus), argv)
    return states, environments


def _measure_cases(
    states: Sequence[_SideState],
    pairs: Sequence[tuple[Case, Case]],
    entries: Sequence[tuple[int, int, int]],
    started: int,
    total: int,
    events: RunEvents,
) -> int:
    """The schedule's entries of one pass, both sides interleaved, into the sides' sessions; how many
    case-passes of the schedule have started once they are in."""
    for (pass_index, case_index), group in itertools.groupby(entries, key=lambda e: e[:2]):
        sides_here = [side for _, _, side in group]
        slot = _Slot(pairs[case_index], sides_here, pass_index, started, total)
        measured = _measure_round(states, slot, events)
        started += len(sides_here)
        for side_index, result in measured.items():
            session = states[side_index].session
            events.case_finished(session.add(pairs[case_index][side_index], pass_index, result))
    return started


def _measure_schedule(
    states: Sequence[_SideState],
    pairs: Sequence[tuple[Case, Case]],
    schedule: Sequence[tuple[int, int, int]],
    floors: Sequence[FloorPair],
    events: RunEvents,
) -> None:
    """Round by round: every (pass, case) of the schedule, both sides interleaved, then each floor
    block on each side in turn (run.ab_floor), into the sides' sessions; the tables and fresh workers
    at every new round."""
    rounds = max([k + 1 for k, _, _ in schedule] + [floor.rounds for floor in floors], default=0)
    started = 0
    for round_index in range(rounds):
        if round_index:
            for state in states:
                state.session.pass_ended()
                state.executor.close()  # every pass in fresh processes
        entries = [entry for entry in schedule if entry[0] == round_index]
        started = _measure_cases(states, pairs, entries, started, len(schedule), events)
        for j, side in floor_schedule(floors, round_index):
            states[side].measure_floor(floors[j], round_index, events)


def run_ab(
    sides: tuple[Side, Side],
    options: RunOptions,
    events: RunEvents | None = None,
    argv: Sequence[str] | None = None,
    cpus: tuple[int, ...] = (),
) -> tuple[RunRecord, RunRecord]:
    """Measure both sides interleaved (see the module docstring); return both records. ``cpus``: the
    CPUs every worker of both sides is pinned to (none: the OS places them)."""
    events = events or SilentEvents()
    pairs = paired_cases(sides[0].plan, sides[1].plan)
    floors = paired_floors(sides[0].plan, sides[1].plan, options.overrides, options.device)
    states, environments = _started_sides(sides, options, argv, cpus)
    schedule = ab_schedule(pairs)
    events.run_started(sides[0].run_dir.parent, [pairs[i][s] for _, i, s in schedule], environments[0])
    try:
        _measure_schedule(states, pairs, schedule, floors, events)
    except BaseException:
        for state in states:
            state.session.finish("interrupted")
            state.close()
        raise
    for state in states:
        state.close()
        state.session.finish("complete")
    return states[0].session.record, states[1].session.record
