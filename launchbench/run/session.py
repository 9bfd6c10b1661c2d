"""The session engine under ``run`` and ``ab``: one run directory's record as its case-passes come in.

A ``RunSession`` starts the record (``new_record``) and its journal, merges each case-pass's result
into the record and appends it to the journal (``add``), writes the tables when a pass ends
(``pass_ended``, paced by ``TablePacing``) and finishes the run (``finish``: the status, results.json
compacted, the tables).
``runner.run`` drives one session; ``ab.run_ab`` drives two, one per side. The events a run reports
(``RunEvents``) and the options it runs under (``RunOptions``) live here because both drivers use them.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from launchbench import __version__
from launchbench.results.merge import merge_pass
from launchbench.results.metadata import Environment, Overrides, Settings
from launchbench.results.schema import CaseResult, RunRecord, ScenarioInfo
from launchbench.results.store import RunJournal
from launchbench.run.worker import cupy_backend
from launchbench.scenario.core import Case


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


TableWriter = Callable[[Path, RunRecord], None]

TABLES_EVERY_S = 5.0  # a pass's end writes the tables once this long has passed since they were last written
TABLES_SHARE = 0.1  # ... and once their last write is at most this share of the time since it began


@dataclass(frozen=True)
class TablePacing:
    """When a pass's end writes the tables: once ``every_s`` has passed since the last write ended and
    that write took at most ``share`` of the time since it began, so the tables follow the run within
    about ``every_s`` and their writing (seconds a pass on a run of a thousand cases) stays under that
    share of the run. The run's end writes them whatever the pacing. ``every_s`` 0 and ``share`` 1:
    after every pass."""

    every_s: float = TABLES_EVERY_S
    share: float = TABLES_SHARE

    def due(self, since_s: float, took_s: float) -> bool:
        """Whether a pass ending ``since_s`` after the last write ended, which took ``took_s``, writes."""
        return since_s >= self.every_s and took_s <= self.share * (took_s + since_s)


@dataclass(frozen=True)
class RunOptions:
    device: int = 0
    overrides: Overrides = field(default_factory=Overrides)
    isolate: bool = True
    backend_factory: Callable[[int], Any] = cupy_backend
    # writes the tables derived from results.json (as passes end, paced, and at the end); None writes none
    write_tables: TableWriter | None = None
    tables_pacing: TablePacing = field(default_factory=TablePacing)
    shard: str | None = None  # "K/N" when the plan holds one shard of the cases (recorded in the settings)
    # where to append the profile events file (profile.py: each case-pass's phases); None writes none
    profile: Path | None = None
    # measures a scenario's floor: block after its chains (None: launchbench.run.floor's, in this process)
    floor: Callable[..., list[CaseResult]] | None = None


def now() -> str:
    """The current time as a run records it (UTC, ISO 8601, whole seconds)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def pass_settings(case: Case) -> Case:
    """The case as one pass measures it: its time budget and sample counts split among its passes."""
    if case.measure.passes == 1:
        return case
    return dataclasses.replace(case, measure=case.measure.one_pass())


def new_record(
    environment: Environment | Mapping[str, Any],
    scenarios: Sequence[ScenarioInfo],
    settings: Settings,
    argv: Sequence[str] | None,
) -> RunRecord:
    """A run's record as it starts: running, on ``environment``, over ``scenarios``, with ``settings``."""
    record = RunRecord(launchbench_version=__version__, started=now(), argv=list(argv or sys.argv))
    return record.model_copy(
        update={
            "status": "running",
            "environment": Environment.of(environment),
            "scenarios": list(scenarios),
            "settings": settings,
        }
    )


class RunSession:
    """One run directory's record and journal as its case-passes come in (see the module docstring)."""

    def __init__(
        self,
        run_dir: Path,
        record: RunRecord,
        write_tables: TableWriter | None,
        profile: Path | None = None,
        pacing: TablePacing | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        """``profile``: where the run's profile events go (profile.py), None for none; ``pacing``: which
        passes' ends write the tables (TablePacing), read on ``clock`` (seconds)."""
        self.run_dir = Path(run_dir)
        self.profile = profile
        self.record = record
        self.journal = RunJournal(self.run_dir)
        self._write_tables = write_tables
        self._pacing = pacing or TablePacing()
        self._clock = clock
        self._tables_ended, self._tables_took = clock(), 0.0
        self.journal.start(record)

    def failed_before(self, case: Case) -> bool:
        """Whether the case failed in an earlier pass (it is not measured again)."""
        previous = self.record.case(case.scenario, case.case_id)
        return previous is not None and bool(previous.error)

    def add(self, case: Case, pass_index: int, result: CaseResult) -> CaseResult:
        """Merge one case-pass into the record and journal it; what the run reports for it (the merged
        case once its last pass or a failure is in, the pass's own result before)."""
        merged = self.add_result(result, pass_index)
        return merged if pass_index == case.measure.passes - 1 or merged.error else result

    def add_result(self, result: CaseResult, pass_index: int) -> CaseResult:
        """Merge one pass of a case (a floor layer's too) into the record and journal it; the merged case."""
        merged = merge_pass(self.record.case(result.scenario, result.case_id), result)
        self.record = self.record.with_case(merged)
        self.journal.append(result, pass_index)
        return merged

    def pass_ended(self) -> None:
        """The tables, as the record stands, where the pacing says this pass's end writes them
        (results.json is compacted only at the start and the end)."""
        if self._pacing.due(self._clock() - self._tables_ended, self._tables_took):
            self._tables()

    def _tables(self) -> None:
        if self._write_tables is None:
            return
        began = self._clock()
        self._write_tables(self.run_dir, self.record)
        self._tables_ended = self._clock()
        self._tables_took = self._tables_ended - began

    def finish(self, status: str) -> RunRecord:
        """End the run with ``status`` (complete or interrupted): results.json compacted, the tables."""
        self.record = self.record.model_copy(update={"status": status, "finished": now()})
        self.journal.compact(self.record)
        self._tables()
        return self.record
