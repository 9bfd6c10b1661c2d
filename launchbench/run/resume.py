"""What a resumed run must hold to: the scenario files it started with (by their recorded sha256), the
settings it recorded, and, before it is called complete, every planned case measured in every pass.

The run records its settings in results.json (``settings``: the command line's measurement overrides,
worker isolation, the device and the case limit); ``RunSettings`` reads them back, with the
defaults a run started without them used."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Overrides, Settings
from launchbench.results.schema import RunRecord, ScenarioInfo
from launchbench.scenario.core import Case


class ResumeRefused(LaunchbenchError):
    """The run cannot be resumed as asked: other scenario files, or settings that disagree with its own."""


class IncompleteRun(LaunchbenchError):
    """A run whose planned case-passes are not all recorded: it is left interrupted, never complete."""


@dataclass(frozen=True)
class RunSettings:
    """The settings a run was started with, as its results.json records them."""

    overrides: Overrides = field(default_factory=Overrides)
    isolate: bool = True
    device: int = 0
    max_cases: int | None = None

    @classmethod
    def of(cls, record: RunRecord) -> RunSettings:
        settings = record.settings
        return cls(
            overrides=settings.overrides,
            isolate=settings.isolate is not False,
            device=settings.device or 0,
            max_cases=settings.max_cases,
        )

    def as_settings(self) -> Settings:
        """What a run records in results.json's ``settings``."""
        return Settings(
            overrides=self.overrides,
            isolate=self.isolate,
            device=self.device,
            max_cases=self.max_cases,
        )


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return a == b


def _short(sha256: str) -> str:
    return f"{sha256[:12]}…"


def _recorded_match(info: ScenarioInfo, recorded: Sequence[ScenarioInfo]) -> ScenarioInfo | None:
    """The recorded scenario this file is: the same content (by sha256), else the same path or scenario
    name (the same file, changed)."""
    same = next((r for r in recorded if r.sha256 and r.sha256 == info.sha256 and r.name == info.name), None)
    if same is not None:
        return same
    return next((r for r in recorded if _same_path(r.file, info.file) or r.name == info.name), None)


def check_scenarios(
    given: Sequence[ScenarioInfo], record: RunRecord, run_dir: Path, allow_changed: bool
) -> list[str]:
    """Refuse scenario files that are not the run's, or that changed since it started (unless
    ``allow_changed``), and a run's file left out; return the warnings for files changed but allowed."""
    recorded = list(record.scenarios)
    warnings = []
    matched: set[str] = set()
    theirs = ", ".join(r.file for r in recorded) or "none recorded"
    for info in given:
        old = _recorded_match(info, recorded)
        if old is None:
            raise ResumeRefused(
                f"{info.file}: another scenario file than the run's (scenario '{info.name}', sha256 "
                f"{_short(info.sha256)}); {run_dir}/results.json records {theirs}: resume with those, or name none"
            )
        matched.add(old.name)
        if not old.sha256 or old.sha256 == info.sha256:
            continue
        moved = "" if _same_path(old.file, info.file) else f" from {old.file}"
        message = (
            f"{info.file}: changed since the run measured scenario '{old.name}'{moved} (sha256 "
            f"{_short(old.sha256)} then, {_short(info.sha256)} now)"
        )
        if not allow_changed:
            raise ResumeRefused(
                f"{message}; resuming would merge passes of two different scenarios (pass --allow-changed-scenario to resume anyway)"
            )
        warnings.append(f"{message}; resuming anyway (--allow-changed-scenario)")
    left_out = [r for r in recorded if r.name not in matched]
    if left_out:
        r = left_out[0]
        raise ResumeRefused(
            f"{r.file}: scenario '{r.name}' of the run in {run_dir} is not among the files given; "
            "give every scenario file of the run, or name none"
        )
    return warnings


def missing_passes(cases: Sequence[Case], record: RunRecord) -> list[str]:
    """Each planned case that lacks a pass (``scenario/case: k of n passes``); a case that failed is done."""
    missing = []
    for case in cases:
        result = record.case(case.scenario, case.case_id)
        done = 0 if result is None else result.passes_done
        if (result is None or not result.error) and done < case.measure.passes:
            missing.append(f"{case.scenario}/{case.case_id}: {done} of {case.measure.passes} passes")
    return missing


def refuse_incomplete(cases: Sequence[Case], record: RunRecord, run_dir: Path) -> None:
    """Raise IncompleteRun when a planned case-pass is missing from the record."""
    missing = missing_passes(cases, record)
    if missing:
        shown = "; ".join(missing[:3]) + ("; …" if len(missing) > 3 else "")
        raise IncompleteRun(
            f"{run_dir}: {len(missing)} of {len(cases)} cases are missing passes ({shown}); "
            "the run is written as interrupted, not complete"
        )
