"""Paired A/B runs on one GPU: two variants of the same cases, measured interleaved.

A variant is what CI has for a base and a pull request: a Python interpreter (a virtualenv with another
CuPy), extra import paths (another checkout of the user's ``python`` step modules), environment
variables, and optionally its own scenario files with the same case ids. Each variant runs in its own
worker processes, started with its interpreter as ``python -m launchbench.run.worker`` with THIS
launchbench's source directory first on its path (so both sides run the same measurement code), then the
variant's paths.

Order: pass by pass, case by case. In pass k, both sides prepare case i in their own workers (A first
when i + k is even, B first otherwise), then sample it in turns of one sampling round each (a few
milliseconds of every mode), A B B A …, until both are done: the two sides' samples of a pass come
from the same seconds, so a host that changes speed within seconds slows both alike. Every pass starts
fresh workers on both sides. Both sides' workers are pinned to the same CPU (by default): a
thread that moves between cores of different speed (a VM's vCPUs) otherwise puts one side of a round
on a fast core and the other on a slow one. Each side's results are an ordinary run directory (results.json
after every case, the tables after every pass) whose settings' ``ab`` entry names its side, its variant,
the other side's directory and the invocation's id (the same on both sides: the history pairs them by it);
launchbench.analysis.compare.compare_paired pairs them.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from launchbench import __version__
from launchbench.errors import LaunchbenchError
from launchbench.results.merge import merge_pass
from launchbench.results.schema import CaseResult, RunRecord
from launchbench.results.store import RunJournal, create_run_dir, refuse_used_run_dir
from launchbench.run.executor import WorkerExecutor, WorkerProcess
from launchbench.run.runner import Plan, RunEvents, RunOptions, SilentEvents, _now, pass_settings
from launchbench.run.worker import CPUS_VARIABLE
from launchbench.scenario.core import Case

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this launchbench package
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


def factory_spec(factory: Callable[[int], Any]) -> str:
    """ "module:function" of a backend factory, for a worker started as a program."""
    return f"{factory.__module__}:{factory.__qualname__}"


def child_environment(variant: Variant) -> dict[str, str]:
    """The worker's environment: this launchbench's source first on PYTHONPATH, then the variant's
    paths, then what PYTHONPATH held; the variant's variables over the current ones."""
    env = {**os.environ, **variant.env}
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    paths = [str(SOURCE_ROOT), *(str(Path(p).resolve()) for p in variant.paths), *inherited]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


class VariantWorker(WorkerProcess):
    """A worker process of one variant: its interpreter, its paths and environment, over a socket pair."""

    def __init__(
        self, variant: Variant, factory: Callable[[int], Any], device: int, cpus: tuple[int, ...] = ()
    ):
        parent, child = socket.socketpair()
        env = child_environment(variant)
        if cpus:
            env[CPUS_VARIABLE] = ",".join(map(str, cpus))
        command = [
            variant.interpreter,
            "-m",
            "launchbench.run.worker",
            str(child.fileno()),
            factory_spec(factory),
            str(device),
        ]
        try:
            popen = subprocess.Popen(command, env=env, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL)
        except OSError as err:
            parent.close()
            raise VariantError(f"cannot start {shlex.join(command[:3])}: {err}") from None
        finally:
            child.close()
        self.conn = Connection(parent.detach())
        self.process = _Child(popen)  # type: ignore[assignment]
        self.timed_out = False


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


def refuse_floor_blocks(plan: Plan) -> None:
    """One line (exit 2) for a scenario with a floor: block: ab samples case by case in each side's
    workers, while the floor's layers are built and sampled together in one process."""
    for loaded, info in zip(plan.files, plan.scenarios, strict=False):
        if loaded.scenario.floor is not None:
            raise LaunchbenchError(
                f"{info.file}: reading the scenario: ab cannot measure its floor: block paired (the floor's "
                "layers are sampled together in one process, ab case by case in each side's workers); run "
                "`launchbench run` (or `floor`) once per side and compare the two runs"
            )


def round_order(case_index: int, pass_index: int) -> tuple[int, int]:
    """(0, 1) for A then B, (1, 0) for B then A: alternating over cases and over passes."""
    return (0, 1) if (case_index + pass_index) % 2 == 0 else (1, 0)


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
    def __init__(self, side: Side, options: RunOptions, cpus: tuple[int, ...]):
        self.side, self.options, self.cpus = side, options, cpus
        self.executor = WorkerExecutor(
            options.backend_factory,
            options.device,
            spawn=lambda: VariantWorker(side.variant, options.backend_factory, options.device, cpus),
        )
        self.record: RunRecord | None = None
        self.journal = RunJournal(side.run_dir)

    def fresh_worker(self) -> dict[str, Any]:
        return self.executor.start()

    def stop(self) -> None:
        self.executor.close()

    def begin(self, case: Case, pass_index: int, events: RunEvents) -> CaseResult | None:
        """Prepare the case in this side's worker (None), or its result when it cannot run."""
        return self.executor.begin(pass_settings(case), pass_index, events.case_progress)

    def round(self) -> bool | CaseResult:
        return self.executor.round()

    def finish(self) -> CaseResult:
        return self.executor.finish()

    def write(self, tables: bool) -> None:
        """results.json once the run has ended (the journal holds every case-pass before), the tables when asked."""
        assert self.record is not None
        if self.record.status != "running":
            self.journal.compact(self.record)
        if tables and self.options.write_tables is not None:
            self.options.write_tables(self.side.run_dir, self.record)


def _measure_round(
    states: Sequence[_SideState],
    cases: tuple[Case, Case],
    sides_in_order: Sequence[int],
    pass_index: int,
    events: RunEvents,
    started: int,
    total: int,
) -> dict[int, CaseResult]:
    """One round of one case: both sides prepare it in their own workers, then sample it round by
    round in turn (A B B A …, starting with the side this round's order puts first) until both are
    done, so that both sides' samples come from the same seconds of the host's life. A side whose case
    failed earlier in the run is skipped; a side whose case fails now leaves the other to go on alone."""
    results: dict[int, CaseResult] = {}
    active: list[int] = []
    for n, side in enumerate(sides_in_order):
        state = states[side]
        assert state.record is not None
        case = cases[side]
        previous = state.record.case(case.scenario, case.case_id)
        if previous is not None and previous.error:
            continue
        events.case_started(case, started + n, total)
        early = state.begin(case, pass_index, events)
        if early is None:
            active.append(side)
        else:
            results[side] = early
    done = dict.fromkeys(active, False)
    turn = 0
    while active and not all(done[side] for side in active):
        for side in active if turn % 2 == 0 else active[::-1]:
            outcome = states[side].round()
            if isinstance(outcome, CaseResult):
                results[side] = outcome
            else:
                done[side] = outcome
        active = [side for side in active if side not in results]
        turn += 1
    for side in active:
        results[side] = states[side].finish()
    return results


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
    for side in sides:
        refuse_used_run_dir(side.run_dir)
    states = [_SideState(side, options, cpus) for side in sides]
    try:
        environments = [state.fresh_worker() for state in states]
        for side in sides:
            create_run_dir(side.run_dir)
    except BaseException:
        for state in states:
            state.stop()
        raise
    other = {0: sides[1].run_dir, 1: sides[0].run_dir}
    ab_id = uuid.uuid4().hex[:12]  # both sides carry it: the history pairs them by it
    for n, (state, side, environment) in enumerate(zip(states, sides, environments)):
        state.record = RunRecord(
            launchbench_version=__version__,
            started=_now(),
            argv=list(argv or sys.argv),
            environment=environment,
            scenarios=side.plan.scenarios,
            settings={
                "overrides": options.overrides,
                "isolate": True,
                "device": options.device,
                "ab": {
                    "id": ab_id,
                    "side": side.name,
                    "variant": side.variant.describe(),
                    "paired_with": str(other[n]),
                    "cpus": list(cpus),
                },
            },
        )
        state.journal.start(state.record)
    schedule = ab_schedule(pairs)
    events.run_started(sides[0].run_dir.parent, [pairs[i][s] for _, i, s in schedule], environments[0])
    current_pass = 0
    started = 0
    try:
        for (pass_index, case_index), entries in itertools.groupby(schedule, key=lambda e: e[:2]):
            if pass_index != current_pass:
                for state in states:
                    state.write(tables=True)
                    state.stop()  # every pass in fresh processes
                current_pass = pass_index
            sides_here = [side for _, _, side in entries]
            measured = _measure_round(
                states, pairs[case_index], sides_here, pass_index, events, started, len(schedule)
            )
            started += len(sides_here)
            for side_index, result in measured.items():
                state = states[side_index]
                assert state.record is not None
                case = pairs[case_index][side_index]
                merged = merge_pass(state.record.case(case.scenario, case.case_id), result)
                state.record = state.record.with_case(merged)
                state.journal.append(result, pass_index)
                events.case_finished(
                    merged if pass_index == case.measure.passes - 1 or merged.error else result
                )
    except BaseException:
        for state in states:
            assert state.record is not None
            state.record = state.record.model_copy(update={"status": "interrupted", "finished": _now()})
            state.write(tables=True)
            state.stop()
        raise
    for state in states:
        assert state.record is not None
        state.stop()
        state.record = state.record.model_copy(update={"status": "complete", "finished": _now()})
        state.write(tables=True)
    return states[0].record, states[1].record  # type: ignore[return-value]
