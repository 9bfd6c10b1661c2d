"""Where a run's own time goes, case-pass by case-pass: an optional events file (``RunOptions.profile``),
one JSON line per case-pass, that leaves every measurement as it is.

A line holds the case, the pass and its phases in seconds: the worker's start where this case-pass
started one (``boot_s``: from the parent's spawn to the worker's main loop, that is the interpreter
and launchbench's imports; ``backend_s``: the backend factory, for CuPy its import, the CUDA context
and NVML; ``canary_s``: the first canary reading; ``ready_s``: from the parent's asking the worker to start its
backend until it holds the worker's environment: for a worker spawned at its pass's first case that
is from the spawn, for one spawned as the previous pass ended (its imports overlapping the parent's
tables) only the part the pass waited for), then the case's own, by the backend's clock (``prepare_s``: buffers,
kernels and graphs; ``warmup_s``, ``settle_s``, ``calibrate_s``, ``sampling_s``: the sampler's;
``check_s``: the output check and the result's assembly) and the parent's ``write_s`` (merging the pass
into the record, the journal line, and the tables when the pass ends). A phase a case-pass did not go
through is absent; a case on several GPUs has only ``write_s``. Nothing here prints."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from launchbench.files import OutputError, os_reason
from launchbench.measure.sampler import SamplerPhases


@dataclass(frozen=True)
class WorkerStart:
    """Seconds a worker took to start (see the module docstring)."""

    boot_s: float
    backend_s: float
    canary_s: float
    ready_s: float


@dataclass(frozen=True)
class CaseTimes:
    """Seconds one case-pass spent in the process that owns the backend."""

    prepare_s: float
    sampler: SamplerPhases | None = None
    check_s: float | None = None


@dataclass(frozen=True)
class PassTimes:
    """One case-pass's phases as its executor saw them: the worker it started (if it started one) and
    the case's own."""

    worker: WorkerStart | None = None
    case: CaseTimes | None = None


def profile_line(scenario: str, case_id: str, pass_index: int, times: PassTimes, write_s: float) -> str:
    """One line of the events file (JSON, phases absent where the case-pass had none)."""
    phases: dict[str, float] = {}
    if times.worker is not None:
        phases.update(dataclasses.asdict(times.worker))
    if times.case is not None:
        phases["prepare_s"] = times.case.prepare_s
        if times.case.sampler is not None:
            phases.update(dataclasses.asdict(times.case.sampler))
        if times.case.check_s is not None:
            phases["check_s"] = times.case.check_s
    phases["write_s"] = write_s
    entry = {"scenario": scenario, "case_id": case_id, "pass": pass_index, "phases": phases}
    return json.dumps(entry, separators=(",", ":"), allow_nan=False) + "\n"


def append_profile(path: Path, line: str) -> None:
    """Append one line to the events file at ``path``; an OutputError names the path when writing fails."""
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(line)
    except OSError as err:
        raise OutputError(f"cannot write the profile {path}: {os_reason(err)}") from None
