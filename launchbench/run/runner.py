"""A run: expand scenarios into cases, schedule their passes (pass 1 over every case, then pass 2, …),
hand each case-pass to an executor (executor.py: in this process, or in worker processes), merge its
result into the record and append it to the run's journal (the tables as passes end, paced; results.json
compacted at the start, the end and on interruption).
Interruptions and dead workers lose only the case in flight.
Passes added for host levels follow the planned ones (extra_passes.py)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Environment, Overrides, Settings
from launchbench.results.schema import RunRecord, ScenarioInfo
from launchbench.results.store import claim_new_dir, create_run_dir, refuse_used_run_dir
from launchbench.run.executor import Executor, InProcessExecutor, WorkerExecutor
from launchbench.run.extra_passes import capped_asks, extra_passes, marked, may_follow, pass_cap
from launchbench.run.profile import PassTimes, append_profile, profile_line
from launchbench.run.resume import RunSettings, refuse_incomplete
from launchbench.run.session import (
    RunEvents,
    RunOptions,
    RunSession,
    SilentEvents,
    new_record,
    pass_settings,
)
from launchbench.run.spread import pass_spreads
from launchbench.scenario.core import Case, measure_overrides_error, with_overrides
from launchbench.scenario.expand import expand_loaded, load_bounded
from launchbench.scenario.load import ScenarioFile

__all__ = [
    "Plan",
    "RunEvents",
    "RunOptions",
    "SilentEvents",
    "early_executor",
    "pass_settings",
    "plan",
    "run",
]


@dataclass(frozen=True)
class Plan:
    cases: list[Case]
    scenarios: list[ScenarioInfo]
    files: list[ScenarioFile] = field(default_factory=list)  # as loaded, in the order of scenarios
    max_cases: int | None = None  # the case limit the files were expanded under (None: each file's own)


def plan(
    paths: Sequence[str | Path], overrides: Overrides | None = None, max_cases: int | None = None
) -> Plan:
    """Load and expand every scenario file (no GPU needed); apply command-line measurement overrides."""
    cases: list[Case] = []
    infos: list[ScenarioInfo] = []
    files: list[ScenarioFile] = []
    seen: set[str] = set()
    for path in paths:
        loaded = load_bounded(path, max_cases)
        scenario = loaded.scenario
        if scenario.name in seen:
            raise LaunchbenchError(
                f"{path}: scenario name '{scenario.name}' is used by another file in this run"
            )
        seen.add(scenario.name)
        expanded = expand_loaded(loaded, max_cases)
        if overrides is not None and overrides.given():
            try:
                measure = with_overrides(scenario.measure, overrides.given())
            except ValidationError as err:
                raise LaunchbenchError(
                    f"{path}: the command line's measure settings do not fit the file's: {measure_overrides_error(err)}"
                ) from None
            expanded = [dataclasses.replace(c, measure=measure) for c in expanded]
        cases.extend(expanded)
        infos.append(
            ScenarioInfo(
                name=scenario.name,
                description=scenario.description.strip(),
                file=str(path),
                sha256=loaded.sha256,
            )
        )
        files.append(loaded)
    return Plan(cases, infos, files, max_cases)


def default_run_dir(root: Path, scenarios: Sequence[ScenarioInfo]) -> Path:
    """A new directory under ``root`` named by the time and the scenarios, made now (a suffix where a run
    started in the same second took the name)."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    names = "+".join(s.name for s in scenarios)[:80]
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", names)
    return claim_new_dir(root / f"{stamp}-{safe}")


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


def run(
    the_plan: Plan,
    run_dir: Path,
    options: RunOptions,
    events: RunEvents | None = None,
    resume: RunRecord | None = None,
    argv: Sequence[str] | None = None,
    executor: Executor | None = None,
) -> RunRecord:
    """Measure every case of the plan that the resumed record lacks; journal every case-pass, write the
    tables as passes end (paced: session.TablePacing), and compact results.json at the end (and on
    interruption). ``executor``: one ``early_executor`` made for these options (its first worker already
    starting), else one made here; closed at the end either way."""
    events = events or SilentEvents()
    executor = executor or make_executor(options)
    try:
        if resume is None:
            refuse_used_run_dir(run_dir)  # nothing is created until the first worker is ready
        refuse_in_process_ranks(the_plan, options)
        environment = executor.start()
        refuse_too_few_devices(the_plan, options, environment)  # before the run directory exists
        if resume is None:
            create_run_dir(run_dir)
        record = _started_record(the_plan, options, environment, resume, argv)
        if resume and resume.environment.gpu.uuid != Environment.of(environment).gpu.uuid:
            events.note("resuming on a different GPU than the run started on")
        session = RunSession(run_dir, record, options.write_tables, options.profile, options.tables_pacing)
        try:
            _measure_passes(the_plan, session, executor, events, environment)
            session.record = _with_floors(the_plan, session.record, options, environment)
        except BaseException:
            session.finish("interrupted")
            raise
        executor.release()  # the workers end while results.json and the tables are written
        return session.finish("complete")
    finally:
        executor.close()


def early_executor(options: RunOptions) -> Executor:
    """The executor a run with ``options`` measures with (pass it to ``run``), its first worker already
    spawned and starting its backend where the run isolates its cases: what the caller does before the
    run (its remaining imports) overlaps the worker's start. Close it where the run does not follow."""
    executor = make_executor(options)
    if isinstance(executor, WorkerExecutor):
        executor.spawn_first()
    return executor


def _measure_passes(
    the_plan: Plan,
    session: RunSession,
    executor: Executor,
    events: RunEvents,
    environment: dict[str, Any],
) -> None:
    """Every scheduled case-pass (and the passes added for host levels) through the executor into the
    session; the tables as passes end; IncompleteRun unless every case-pass is recorded."""
    schedule = pass_schedule(the_plan.cases, session.record)
    events.run_started(session.run_dir, [case for case, _ in schedule], environment)

    profile = session.profile

    def more() -> list[tuple[Case, int]]:
        """Passes added for host levels, read from the record as it is when the schedule runs out."""
        return _added_passes(the_plan.cases, session.record, events)

    index = 0
    while index < len(schedule):  # the schedule grows by the passes added for host levels
        case, pass_index = schedule[index]
        skipped = session.failed_before(case)  # a case that failed in an earlier pass is not measured again
        if not skipped:
            events.case_started(case, index, len(schedule))
            spreads = pass_spreads(session.record.case(case.scenario, case.case_id))
            result = executor.execute(pass_settings(case), pass_index, events.case_progress, spreads)
            writing = time.perf_counter()
            shown = session.add(case, pass_index, marked(result, case, pass_index))
        if index + 1 == len(schedule):
            schedule += more()  # the passes added for host levels, known once this pass is in
        if index + 1 < len(schedule) and schedule[index + 1][1] != pass_index:
            executor.next_pass(schedule[index + 1][1], _pass_after(the_plan.cases, schedule, index + 1))
            session.pass_ended()  # the last pass's tables: the run's finish writes them
        if not skipped:
            if profile is not None:
                times = executor.last_times or PassTimes()
                line = profile_line(
                    case.scenario, case.case_id, pass_index, times, time.perf_counter() - writing
                )
                append_profile(profile, line)
            events.case_finished(shown)
        index += 1
    for case, why in capped_asks(the_plan.cases, session.record):
        events.note(
            f"{case.scenario} {case.case_id}: {why}; no pass added: at its cap of {pass_cap(case)} passes (measure.added_passes)"
        )
    refuse_incomplete(the_plan.cases, session.record, session.run_dir)  # complete only with every case-pass


def _pass_after(cases: Sequence[Case], schedule: list[tuple[Case, int]], start: int) -> int | None:
    """The pass that follows the one ``schedule[start]`` belongs to: the schedule's next, else one that
    may be added for host levels (extra_passes.may_follow), else None."""
    current = schedule[start][1]
    following = next((p for _, p in schedule[start:] if p != current), None)
    if following is None and may_follow(cases, current):
        return current + 1
    return following


def _with_floors(
    the_plan: Plan, record: RunRecord, options: RunOptions, environment: dict[str, Any]
) -> RunRecord:
    """Each scenario's floor: block measured after the chains, its layers cases of the run."""
    from launchbench.run.floor import floor_requests, measure_in_process, with_floors

    requests = floor_requests(the_plan.files, the_plan.scenarios, options.overrides, options.device)
    if not requests:
        return record
    address = Environment.of(environment).gpu.pci_address
    return with_floors(record, requests, options.floor or measure_in_process, address)


def _added_passes(cases: Sequence[Case], record: RunRecord, events: RunEvents) -> list[tuple[Case, int]]:
    """The next round of passes added for host levels (extra_passes), each announced."""
    added = extra_passes(cases, record)
    for case, pass_index, why in added:
        events.note(
            f"{case.scenario} {case.case_id}: {why}; adding pass {pass_index + 1} (at most {pass_cap(case)})"
        )
    return [(case, pass_index) for case, pass_index, _ in added]


def _widest(the_plan: Plan) -> tuple[int, str]:
    """The most GPUs a case of the plan runs on, and the file of its scenario."""
    devices, scenario = max(((c.devices, c.scenario) for c in the_plan.cases), default=(1, ""))
    file = next((s.file for s in the_plan.scenarios if s.name == scenario), scenario)
    return devices, file


def refuse_in_process_ranks(the_plan: Plan, options: RunOptions) -> None:
    devices, file = _widest(the_plan)
    if devices > 1 and not options.isolate:
        raise LaunchbenchError(
            f"{file}: runs on {devices} GPUs, one worker process per GPU; drop --no-isolate"
        )


def refuse_too_few_devices(the_plan: Plan, options: RunOptions, environment: dict[str, Any]) -> None:
    """A run that needs more GPUs than CUDA shows is refused before anything is measured."""
    devices, file = _widest(the_plan)
    visible = Environment.of(environment).device_count
    if devices <= 1 or visible is None:
        return
    available = visible - options.device
    if devices > available:
        start = f" from --device {options.device}" if options.device else ""
        raise TooFewDevices(
            f"{file}: needs {devices} GPUs (devices: {devices}); {available} visible to CUDA{start}"
        )


class TooFewDevices(LaunchbenchError):
    """The run needs more GPUs than are visible."""


def make_executor(options: RunOptions) -> Executor:
    if options.isolate:
        return WorkerExecutor(options.backend_factory, options.device)
    return InProcessExecutor(options.backend_factory, options.device)


def _started_record(
    the_plan: Plan,
    options: RunOptions,
    environment: dict[str, Any],
    resume: RunRecord | None,
    argv: Sequence[str] | None,
) -> RunRecord:
    """The record the run starts from: a resumed run keeps its own environment, scenarios and settings
    (the command line is held to them before the run starts; a setting it did not record is added)."""
    settings = RunSettings(options.overrides, options.isolate, options.device, the_plan.max_cases)
    if resume is not None:
        return resume.model_copy(
            update={
                "status": "running",
                "environment": Environment.of(resume.environment.model_dump() or environment),
                "scenarios": resume.scenarios or the_plan.scenarios,
                "settings": Settings.model_validate(
                    {**settings.as_settings().model_dump(), **resume.settings.model_dump()}
                ),
            }
        )
    shard = {"shard": options.shard} if options.shard else {}
    return new_record(environment, the_plan.scenarios, settings.as_settings().model_copy(update=shard), argv)
