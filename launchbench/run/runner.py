"""A run: expand scenarios into cases, measure each case in a worker process, and rewrite results.json
after every case (the tables after every pass). Interruptions and dead workers lose only the case in flight.

Each pass runs in a fresh worker process (as pyperf spreads a benchmark over processes): what a process
happens to get (its CUDA streams' hardware queues, its memory placement, the core it lands on) then
varies between the passes of one run, where the statistics see it, instead of between runs."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import multiprocessing
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from launchbench import __version__
from launchbench.errors import LaunchbenchError, NoGpuError
from launchbench.results.merge import merge_pass
from launchbench.results.schema import CaseResult, RunRecord, ScenarioInfo
from launchbench.results.store import create_run_dir, refuse_used_run_dir, write_run
from launchbench.run.execute import execute_case, failed_case
from launchbench.run.worker import cupy_backend, serve
from launchbench.scenario.core import Case, measure_overrides_error, with_overrides
from launchbench.scenario.expand import expand_loaded, load_bounded
from launchbench.scenario.load import ScenarioFile

WORKER_START_TIMEOUT = 180.0
CASE_TIMEOUT_FLOOR = 300.0


class RunEvents(Protocol):
    """What a run reports as it goes (the console implements it; measurement code never prints)."""

    def run_started(self, run_dir: Path, cases: Sequence[Case], environment: dict[str, Any]) -> None: ...

    def case_started(self, case: Case, index: int, total: int) -> None: ...

    def case_progress(self, fraction: float) -> None: ...

    def case_finished(self, result: CaseResult) -> None: ...

    def note(self, message: str) -> None: ...


class SilentEvents:
    def run_started(self, run_dir: Path, cases: Sequence[Case], environment: dict[str, Any]) -> None:
        return None

    def case_started(self, case: Case, index: int, total: int) -> None:
        return None

    def case_progress(self, fraction: float) -> None:
        return None

    def case_finished(self, result: CaseResult) -> None:
        return None

    def note(self, message: str) -> None:
        return None


@dataclass(frozen=True)
class RunOptions:
    device: int = 0
    overrides: dict[str, Any] = field(default_factory=dict)
    isolate: bool = True
    backend_factory: Callable[[int], Any] = cupy_backend
    # writes the tables derived from results.json (after every pass and at the end); None writes none
    write_tables: Callable[[Path, RunRecord], None] | None = None


@dataclass(frozen=True)
class Plan:
    cases: list[Case]
    scenarios: list[ScenarioInfo]
    files: list[ScenarioFile] = field(default_factory=list)  # as loaded, in the order of scenarios


def plan(paths: Sequence[str | Path], overrides: dict[str, Any] | None = None, max_cases: int | None = None) -> Plan:
    """Load and expand every scenario file (no GPU needed); apply command-line measurement overrides."""
    cases: list[Case] = []
    infos: list[ScenarioInfo] = []
    files: list[ScenarioFile] = []
    seen: set[str] = set()
    for path in paths:
        loaded = load_bounded(path, max_cases)
        scenario = loaded.scenario
        if scenario.name in seen:
            raise LaunchbenchError(f"{path}: scenario name '{scenario.name}' is used by another file in this run")
        seen.add(scenario.name)
        expanded = expand_loaded(scenario, loaded.file, loaded.lines, max_cases)
        if overrides:
            try:
                measure = with_overrides(scenario.measure, overrides)
            except ValidationError as err:
                raise LaunchbenchError(
                    f"{path}: the command line's measure settings do not fit the file's: {measure_overrides_error(err)}"
                ) from None
            expanded = [dataclasses.replace(c, measure=measure) for c in expanded]
        cases.extend(expanded)
        infos.append(ScenarioInfo(name=scenario.name, description=scenario.description.strip(), file=str(path), sha256=loaded.sha256))
        files.append(loaded)
    return Plan(cases, infos, files)


def default_run_dir(root: Path, scenarios: Sequence[ScenarioInfo]) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    names = "+".join(s.name for s in scenarios)[:80]
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", names)
    candidate = root / f"{stamp}-{safe}"
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = root / f"{stamp}-{safe}-{suffix}"
    return candidate


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


class _Worker:
    """A spawned worker process and its pipe."""

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

    def run(self, case: Case, events: RunEvents, timeout: float) -> tuple[CaseResult, bool] | None:
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
                events.case_progress(payload)
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


def pass_settings(case: Case) -> Case:
    """The case as one pass measures it: its time budget and sample counts split among its passes."""
    m = case.measure
    if m.passes == 1:
        return case
    share = m.model_copy(
        update={
            "max_time": m.max_time / m.passes,
            "min_samples": max(3, math.ceil(m.min_samples / m.passes)),
            "max_samples": max(3, math.ceil(m.max_samples / m.passes)),
            "passes": 1,
        }
    )
    return dataclasses.replace(case, measure=share)


def pass_schedule(cases: Sequence[Case], record: RunRecord) -> list[tuple[Case, int]]:
    """(case, pass index) in run order: pass 1 over every case, then pass 2, …; done passes left out."""
    done = {(c.scenario, c.case_id): (c.passes_done, bool(c.error)) for c in record.cases}
    schedule = []
    for pass_index in range(max((c.measure.passes for c in cases), default=0)):
        for case in cases:
            passes_done, failed = done.get((case.scenario, case.case_id), (0, False))
            if pass_index < case.measure.passes and pass_index >= passes_done and not failed:
                schedule.append((case, pass_index))
    return schedule


def _case_timeout(case: Case) -> float:
    return max(CASE_TIMEOUT_FLOOR, 5 * case.measure.max_time + 60)


def run(
    the_plan: Plan,
    run_dir: Path,
    options: RunOptions,
    events: RunEvents | None = None,
    resume: RunRecord | None = None,
    argv: Sequence[str] | None = None,
) -> RunRecord:
    """Measure every case of the plan that the resumed record lacks; write results.json after every case
    and the tables after every pass (and on interruption)."""
    events = events or SilentEvents()
    if resume is None:
        refuse_used_run_dir(run_dir)  # before a worker starts; nothing is created until it is ready
    worker: _Worker | None = None
    backend: Any = None
    if options.isolate:
        worker = _Worker(options.backend_factory, options.device)
        environment = worker.start()
    else:
        backend = options.backend_factory(options.device)
        environment = backend.environment()
    if resume is None:
        try:
            create_run_dir(run_dir)
        except LaunchbenchError:
            if worker is not None:
                worker.stop()
            raise
    record = resume or RunRecord(launchbench_version=__version__, started=_now(), argv=list(argv or sys.argv))
    record = record.model_copy(
        update={
            "status": "running",
            "environment": record.environment or environment,
            "scenarios": record.scenarios or the_plan.scenarios,
            "settings": {"overrides": options.overrides, "isolate": options.isolate, "device": options.device},
        }
    )
    if resume and resume.environment.get("gpu", {}).get("uuid") != environment.get("gpu", {}).get("uuid"):
        events.note("resuming on a different GPU than the run started on")
    write_run(run_dir, record)
    schedule = pass_schedule(the_plan.cases, record)
    events.run_started(run_dir, [case for case, _ in schedule], environment)
    worker_pass = schedule[0][1] if schedule else 0
    try:
        for index, (case, pass_index) in enumerate(schedule):
            previous = record.case(case.scenario, case.case_id)
            if previous is not None and previous.error:
                continue  # a case that failed in an earlier pass is not measured again
            events.case_started(case, index, len(schedule))
            one_pass = pass_settings(case)
            if options.isolate:
                if worker is not None and pass_index != worker_pass:
                    worker.stop()  # every pass in a fresh process: process-level state varies between passes
                    worker = None
                worker_pass = pass_index
                if worker is None or not worker.alive():
                    worker = _Worker(options.backend_factory, options.device)
                    worker.start()
                answer = worker.run(one_pass, events, _case_timeout(one_pass))
                if answer is None:
                    if worker.timed_out:
                        why = f"the case did not finish within {_case_timeout(one_pass):.0f} s; its worker was stopped"
                    else:
                        why = f"the worker process died (exit code {worker.process.exitcode}) while running this case"
                    result = failed_case(case, why)
                    worker = None
                else:
                    result, ending = answer
                    if ending:
                        worker.stop()
                        worker = None
            else:
                result = execute_case(backend, one_pass, backend.clock, events.case_progress)
            merged = merge_pass(previous, result)
            record = record.with_case(merged)
            pass_ends = index + 1 == len(schedule) or schedule[index + 1][1] != pass_index
            write_run(run_dir, record)
            if pass_ends and options.write_tables is not None:
                options.write_tables(run_dir, record)
            events.case_finished(merged if pass_index == case.measure.passes - 1 or merged.error else result)
    except BaseException:
        record = record.model_copy(update={"status": "interrupted", "finished": _now()})
        write_run(run_dir, record)
        if options.write_tables is not None:
            options.write_tables(run_dir, record)
        if worker is not None:
            worker.stop()
        raise
    if worker is not None:
        worker.stop()
    record = record.model_copy(update={"status": "complete", "finished": _now()})
    write_run(run_dir, record)
    if options.write_tables is not None:
        options.write_tables(run_dir, record)
    return record
