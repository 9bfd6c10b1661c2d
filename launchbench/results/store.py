"""Run directories: results.json (the record, raw samples), read and written atomically.

The runner writes results.json after every case, so an interrupted run keeps every case it finished. The
tables derived from it (results.csv, costmodel.csv) are written by ``launchbench.report.run_files``. Every
file is written atomically (temporary file, then rename). A run directory that already holds results is
never overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launchbench import files
from launchbench.errors import ResultsFileError
from launchbench.files import OutputError, os_reason, read_regular_file
from launchbench.results.schema import SCHEMA_VERSION, TOOL_NAME, RunRecord

MAX_RESULTS_BYTES = 512 * 1024 * 1024  # a sweep of 1000 cases, 5 passes of 2000 samples, is about 200 MiB
RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
COSTMODEL_CSV = "costmodel.csv"


def atomic_write_text(path: Path, text: str) -> None:
    """Write a run directory's file atomically, making the directory (and its parents) first; a failure
    (a full disk, a folder that cannot be made) is an OutputError: one line, exit 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot make the folder {path.parent}: {os_reason(err)}") from None
    files.atomic_write_text(path, text)


def refuse_used_run_dir(path: Path) -> None:
    """Raise when ``path`` cannot be a fresh run directory: not a directory, or already holding results."""
    if path.exists() and not path.is_dir():
        raise ResultsFileError(f"{path} exists and is not a directory")
    if (path / RESULTS_JSON).exists() or (path / RESULTS_CSV).exists():
        raise ResultsFileError(f"{path} already holds results; choose another --out (runs are never overwritten)")


def create_run_dir(path: Path) -> Path:
    """Make a fresh run directory; refuse one that already holds results."""
    refuse_used_run_dir(path)
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_run(run_dir: Path, run: RunRecord) -> None:
    """results.json, atomically."""
    atomic_write_text(run_dir / RESULTS_JSON, run.model_dump_json())


def resolve_results_file(path: str | Path) -> Path:
    """A run directory or a results.json / results.csv inside one → the results.json path."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_JSON
    elif p.name == RESULTS_CSV:
        p = p.with_name(RESULTS_JSON)
    return p


def _migrate(data: dict[str, Any], file: str) -> dict[str, Any]:
    """Bring an older schema version forward to SCHEMA_VERSION (one step per version)."""
    if "schema_version" not in data:
        raise ResultsFileError(f"{file}: no schema_version; not a launchbench results file")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ResultsFileError(f"{file}: schema_version is {json.dumps(version)[:40]}, not a whole number; corrupt results file")
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"{file}: schema version {version} is newer than this launchbench understands ({SCHEMA_VERSION}); upgrade launchbench"
        )
    if version < 1:
        raise ResultsFileError(f"{file}: schema version {version} is not a known launchbench version")
    return data


def load_run(path: str | Path) -> RunRecord:
    """Read a run (directory or results file), validating it and migrating older schemas.

    Every failure is a ResultsFileError whose message starts with the file's path."""
    file = resolve_results_file(path)
    if not file.exists():
        if Path(path).is_dir():
            raise ResultsFileError(f"{path}: no {RESULTS_JSON} in this directory; not a launchbench run")
        raise ResultsFileError(f"{file}: no such file")
    # a regular file of bounded size only: a FIFO would block and /dev/zero would fill memory
    raw = read_regular_file(file, MAX_RESULTS_BYTES, lambda message: ResultsFileError(f"{file}: {message}"), "a results file")
    if not raw.strip():
        raise ResultsFileError(f"{file}: file is empty (truncated or corrupt?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultsFileError(f"{file}: not UTF-8 text ({err.reason} at byte {err.start}); corrupt or not a results file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno} (character {err.pos})"
        raise ResultsFileError(f"{file}: not valid JSON (truncated or corrupt?): {err.msg} at {where}") from None
    except (ValueError, RecursionError) as err:  # e.g. a number of more than 4300 digits, or [[[[... nested
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err).split(":")[0]
        raise ResultsFileError(f"{file}: not valid JSON (truncated or corrupt?): {reason}") from None
    if not isinstance(data, dict):
        raise ResultsFileError(f"{file}: not a launchbench results file (top level is not an object)")
    if "tool" not in data:
        raise ResultsFileError(f"{file}: not a launchbench results file (no 'tool' field)")
    if data["tool"] != TOOL_NAME:
        raise ResultsFileError(f"{file}: written by {json.dumps(data['tool'])[:60]}, not launchbench")
    data = _migrate(data, str(file))
    try:
        return RunRecord.model_validate(data)
    except ValidationError as err:
        errors = err.errors(include_url=False)
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"])
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ResultsFileError(f"{file}: invalid results file at '{where}': {first['msg']}{more}") from None
