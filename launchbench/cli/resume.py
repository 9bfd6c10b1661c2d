"""run --resume on the command line: the run to resume, its recorded settings, and each option given
again held to them (one line naming the option as typed and the run's own value when they disagree)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from launchbench.scenario.core import OVERRIDE_OPTIONS

if TYPE_CHECKING:
    from launchbench.results.schema import RunRecord
    from launchbench.run.resume import RunSettings

# the option of each measurement override a run records (the others are set only by --quick)
OPTION_OF = OVERRIDE_OPTIONS


def resumed(resume_dir: Path, out_dir: Path | None, given: RunSettings) -> tuple[RunRecord, RunSettings]:
    """The run to resume and the settings it recorded; an option given again must agree with them."""
    from launchbench.results.store import load_run_to_resume
    from launchbench.run.resume import ResumeRefused, RunSettings

    if out_dir is not None and out_dir.resolve() != resume_dir.resolve():
        raise ResumeRefused(
            f"-d {out_dir}: --resume writes into the run it resumes ({resume_dir}); leave -d out"
        )
    record = load_run_to_resume(resume_dir)
    recorded = RunSettings.of(record)
    for key, shown, value in _given_again(given):
        if not record.settings.recorded(key if key in RUN_KEYS else "overrides"):
            recorded = _recorded_with(recorded, key, value)  # a run that recorded none: the command line's
            continue
        then = _recorded_value(recorded, key)
        if then != value:
            raise ResumeRefused(
                f"{shown}: the run was started {_started_with(key, then, shown == '--quick')} "
                f"(as {resume_dir}/results.json records); leave it out to resume with the run's own settings"
            )
    return record, recorded


def recorded_files(record: RunRecord, run_dir: Path) -> tuple[str, ...]:
    """The scenario files a run records, each there to be read."""
    from launchbench.run.resume import ResumeRefused

    for info in record.scenarios:
        if not Path(info.file).is_file():
            raise ResumeRefused(
                f"{info.file}: not found, reading the scenario files {run_dir}/results.json records "
                f"(relative to where the run was started); run from there, or name them: "
                f"launchbench run FILE... --resume {run_dir}"
            )
    return tuple(info.file for info in record.scenarios)


def _given_again(given: RunSettings) -> list[tuple[str, str, Any]]:
    """The settings the command line gives: (setting, as typed, value); --quick's own as '--quick'."""
    source = click.get_current_context().get_parameter_source
    typed = ParameterSource.COMMANDLINE
    out: list[tuple[str, str, Any]] = [
        (key, f"{OPTION_OF[key]} {value:g}" if source(key) == typed else "--quick", value)
        for key, value in given.overrides.given().items()
    ]
    if source("device") == typed:
        out.append(("device", f"--device {given.device}", given.device))
    if not given.isolate:
        out.append(("isolate", "--no-isolate", False))
    if given.max_cases is not None:
        out.append(("max_cases", f"--max-cases {given.max_cases}", given.max_cases))
    return out


RUN_KEYS = ("device", "isolate", "max_cases")  # the settings besides the measurement overrides


def _recorded_value(recorded: RunSettings, key: str) -> Any:
    return getattr(recorded, key) if key in RUN_KEYS else recorded.overrides.given().get(key)


def _recorded_with(recorded: RunSettings, key: str, value: Any) -> RunSettings:
    if key in RUN_KEYS:
        return dataclasses.replace(recorded, **{key: value})
    return dataclasses.replace(recorded, overrides=recorded.overrides.model_copy(update={key: value}))


def _started_with(key: str, value: Any, quick: bool) -> str:
    """How a recorded setting was given on the command line that started the run (``quick``: the
    setting given now comes from --quick)."""
    if quick and value is None:
        return "without --quick"
    if key == "isolate":
        return "without --no-isolate" if value else "with --no-isolate"
    option = {"device": "--device", "max_cases": "--max-cases", **OPTION_OF}.get(key)
    if option is None:  # a setting only --quick sets
        return f"with {key} {value:g}"
    return f"without {option}" if value is None else f"with {option} {value:g}"
