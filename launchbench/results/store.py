"""Run directories: results.json (the record) and results.journal.jsonl (one line per case-pass).

While a run goes, the runner appends one line per finished case-pass to the journal (``RunJournal``,
each line fsync'd) instead of rewriting results.json, so the cost of recording a case does not grow with
the cases before it. results.json is compacted from the record when the run starts, ends or is
interrupted; it says how many journal bytes it holds, so a reader of a run that crashed, or that is still
running, replays the journal instead (``load_run``). The tables derived from the record (results.csv,
costmodel.csv) are written by ``launchbench.report.run_files``. A run directory that already holds
results is never overwritten.

Every file is read with limits and checks: a regular file (a FIFO or a device is refused before it is
opened for reading), at most ``MAX_RESULTS_BYTES``, UTF-8 JSON, the schema with types, ranges and
finiteness (``schema.record_problems`` for the checks across fields, ``sanity.sanity_problems`` for what
cannot hold: counts, physical bounds, the environment's types, control characters). Every failure is a
``ResultsFileError`` that names the file and the JSON path of what is wrong.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launchbench import files
from launchbench.errors import ResultsFileError
from launchbench.files import OutputError, os_reason, read_regular_file
from launchbench.results.document import parsed_document, paused_collector
from launchbench.results.level_splits import with_level_splits
from launchbench.results.merge import merge_pass
from launchbench.results.sanity import metadata_problems, sanity_problems
from launchbench.results.schema import (
    MAX_WHOLE,
    MEASURED_STATUSES,
    SCHEMA_VERSION,
    TOOL_NAME,
    WALL,
    CaseResult,
    Location,
    RunRecord,
    record_problems,
)
from launchbench.scenario.messages import Translator, format_path

RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
COSTMODEL_CSV = "costmodel.csv"
JOURNAL = "results.journal.jsonl"
MAX_RESULTS_BYTES = (
    512 * 1024 * 1024
)  # results.json or the journal; 1000 cases, 5 passes of 2000 samples: ~200 MiB


def atomic_write_text(path: Path, text: str) -> None:
    """Write a run directory's file atomically, making the directory (and its parents) first; a failure
    (a full disk, a folder that cannot be made) is an OutputError: one line, exit 2."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot make the folder {path.parent} (writing): {os_reason(err)}") from None
    files.atomic_write_text(path, text)


def refuse_used_run_dir(path: Path) -> None:
    """Raise when ``path`` cannot be a fresh run directory: not a directory, or already holding results."""
    if path.exists() and not path.is_dir():
        raise ResultsFileError(f"{path} exists and is not a directory")
    if any((path / name).exists() for name in (RESULTS_JSON, RESULTS_CSV, JOURNAL)):
        raise _used(path)


def _used(path: Path) -> ResultsFileError:
    return ResultsFileError(
        f"{path} already holds results; choose another -d/--out-dir (runs are never overwritten)"
    )


def _make_parents(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OutputError(f"cannot make the run directory {path} (writing): {os_reason(err)}") from None


def create_run_dir(path: Path) -> Path:
    """Claim a fresh run directory, atomically: the directory made with os.mkdir, or an existing empty
    one taken by creating its journal exclusively (O_EXCL), so of two runs given one directory only one
    writes into it; the other is refused as if it held results."""
    refuse_used_run_dir(path)
    _make_parents(path)
    try:
        os.mkdir(path)
    except FileExistsError:
        pass  # an existing folder: claimed by its journal below
    except OSError as err:
        raise OutputError(f"cannot make the run directory {path} (writing): {os_reason(err)}") from None
    try:
        os.close(os.open(path / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise _used(path) from None
    except OSError as err:
        raise OutputError(f"cannot write {path / JOURNAL} (writing): {os_reason(err)}") from None
    return path


def claim_new_dir(candidate: Path) -> Path:
    """Make a new directory named ``candidate``, or ``candidate-2``, ``-3``, … where that name is taken
    (os.mkdir, atomic: runs started together in the same second get a directory each)."""
    _make_parents(candidate)
    for suffix in range(1, 10_000):
        path = candidate if suffix == 1 else candidate.with_name(f"{candidate.name}-{suffix}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
        except OSError as err:
            raise OutputError(f"cannot make the run directory {path}: {os_reason(err)}") from None
    raise OutputError(f"cannot make the run directory {candidate}: 9999 directories of that name exist")


def release_if_empty(path: Path) -> None:
    """Remove a claimed directory that nothing was written into (a run that failed before it started)."""
    with contextlib.suppress(OSError):  # it holds the run's files (or is gone): kept as it is
        path.rmdir()


def write_run(run_dir: Path, run: RunRecord) -> None:
    """results.json, atomically, with its modes' level splits kept (level_splits.with_level_splits)."""
    atomic_write_text(run_dir / RESULTS_JSON, with_level_splits(run).model_dump_json())


# --- reading with limits --------------------------------------------------------------------------------


def read_capped(path: Path, limit: int = MAX_RESULTS_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``launchbench.files.read_regular_file``: a
    FIFO, device, directory or socket is refused without being read)."""
    return read_regular_file(
        path, limit, lambda message: ResultsFileError(f"{path}: {message}"), "a results file"
    )


def _decode(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ResultsFileError(
            f"{where}: not UTF-8 text ({err.reason} at byte {err.start}); corrupt or not a results file"
        ) from None


def _parse_json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultsFileError(
            f"{where}: not valid JSON (truncated or corrupt?): {err.msg} at line {err.lineno}, column {err.colno} (character {err.pos})"
        ) from None
    except (ValueError, RecursionError) as err:  # e.g. a number of more than 4300 digits, or [[[[... nested
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err).split(":")[0]
        raise ResultsFileError(f"{where}: not valid JSON (truncated or corrupt?): {reason}") from None


# --- validation messages --------------------------------------------------------------------------------


def json_path(loc: Iterable[str | int]) -> str:
    """('cases', 3, 'modes', 'eager') → 'cases[3].modes.eager'."""
    return format_path(loc) or "(top level)"


def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        return f"a number of {len(str(abs(value)))} digits"
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_TYPE_WORDS = {
    "int_type": "a whole number",
    "float_type": "a number",
    "string_type": "text",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}


def _bound(error: Any) -> str:
    bound = next(iter((error.get("ctx") or {}).values()), "?")
    shown = "2^53" if bound == MAX_WHOLE else f"{bound:g}" if isinstance(bound, float) else bound
    return f"must be {_BOUNDS[error['type']]} {shown} (got {_shown(error.get('input'))})"


def _type_word(error: Any) -> str:
    return f"must be {_TYPE_WORDS[error['type']]} (got {_shown(error.get('input'))})"


def _literal(error: Any) -> str:
    return (
        f"must be one of {(error.get('ctx') or {}).get('expected', '?')} (got {_shown(error.get('input'))})"
    )


def _pydantic_words(error: Any) -> str:
    return f"{error['msg'][0].lower()}{error['msg'][1:]} (got {_shown(error.get('input'))})"


_WORDS: Translator[Any, str] = Translator(
    by_type={
        "finite_number": lambda error: f"must be finite (got {error.get('input')!r})",
        **dict.fromkeys(_BOUNDS, _bound),
        "missing": lambda error: "required field missing",
        "extra_forbidden": lambda error: "unknown field",
        **dict.fromkeys(_TYPE_WORDS, _type_word),
        "literal_error": _literal,
    },
    default=_pydantic_words,
)


def _message(error: Any) -> str:
    return _WORDS(error["type"], error)


def _refuse(where: str, problems: list[tuple[Location, str]]) -> None:
    loc, message = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    raise ResultsFileError(f"{where}: {json_path(loc)}: {message}{more}")


def _validate(
    model: Any, data: Any, where: str, relocate: Callable[[Location], Location] = lambda loc: loc
) -> Any:
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as err:
        _refuse(where, [(relocate(tuple(e["loc"])), _message(e)) for e in err.errors(include_url=False)])


# --- schema versions ------------------------------------------------------------------------------------


def _check_header(data: Any, where: str) -> int:
    """The file's schema version, once it is known to be a launchbench file this code can read."""
    if not isinstance(data, dict):
        raise ResultsFileError(f"{where}: not a launchbench results file (top level is not an object)")
    if "tool" not in data:
        raise ResultsFileError(f"{where}: not a launchbench results file (no 'tool' field)")
    if data["tool"] != TOOL_NAME:
        raise ResultsFileError(f"{where}: written by {_shown(data['tool'])}, not launchbench")
    if "schema_version" not in data:
        raise ResultsFileError(f"{where}: no schema_version; not a launchbench results file")
    version = data["schema_version"]
    if isinstance(version, bool) or not isinstance(version, int):
        raise ResultsFileError(
            f"{where}: schema_version is {_shown(version)}, not a whole number; corrupt results file"
        )
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"{where}: schema version {version} is newer than this launchbench understands ({SCHEMA_VERSION}); upgrade launchbench"
        )
    if version < 1:
        raise ResultsFileError(f"{where}: schema version {version} is not a known launchbench version")
    return version


_V1_PASS_FIELDS = ("iters_per_sample", "throttled_samples", "target_met")


def _v1_mode(mode: Any, where: Location) -> tuple[Any, Callable[[Location], Location]]:
    """A v1 mode result as v2 (its pooled samples split into passes), and how to map a location in the
    v2 mode back to the v1 file's."""
    if not isinstance(mode, dict):
        return mode, lambda loc: loc
    samples = mode.get("samples", {})
    sizes = mode.get("pass_sizes") or []
    if not isinstance(samples, dict) or not all(isinstance(v, list) for v in samples.values()):
        raise ResultsFileError(f"{json_path((*where, 'samples'))}: must be an object of lists")
    if not isinstance(sizes, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in sizes
    ):
        raise ResultsFileError(f"{json_path((*where, 'pass_sizes'))}: must be a list of whole numbers >= 0")
    wall = samples.get(WALL, [])
    if not sizes:
        sizes = [len(wall)] if samples or mode.get("status") in MEASURED_STATUSES else []
    for key, values in samples.items():
        if (values or (key == WALL and mode.get("status") in MEASURED_STATUSES)) and len(values) != sum(
            sizes
        ):
            raise ResultsFileError(
                f"{json_path((*where, 'samples', key))}: holds {len(values)} samples; the pass sizes add up to {sum(sizes)}"
            )
    lifecycles = mode.get("lifecycle_passes") or []
    lifecycle_key = "lifecycle_passes" if len(lifecycles) == len(sizes) and lifecycles else "lifecycle"
    if lifecycle_key == "lifecycle":
        lifecycles = [mode.get("lifecycle")] * len(sizes)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    passes = []
    for i, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        one: dict[str, Any] = {
            "iters_per_sample": mode.get("iters_per_sample", 0),
            "samples": {key: values[start : start + size] for key, values in samples.items() if values},
            "throttled_samples": mode.get("throttled_samples", 0) if i == 0 else 0,
            "target_met": mode.get("target_met", False),
            "lifecycle": lifecycles[i],
        }
        passes.append(one)
    moved = {"samples", "pass_sizes", "lifecycle", "lifecycle_passes", *_V1_PASS_FIELDS}
    v2 = {key: value for key, value in mode.items() if key not in moved}
    v2["passes"] = passes

    def relocate(loc: Location) -> Location:
        if len(loc) < 2 or loc[0] != "passes" or not isinstance(loc[1], int):
            return (*where, "pass_sizes") if loc[:1] == ("passes",) else (*where, *loc)
        p, rest = loc[1], loc[2:]
        if rest[:1] == ("samples",) and len(rest) >= 3 and isinstance(rest[2], int):
            return (*where, "samples", rest[1], starts[p] + rest[2], *rest[3:])
        if rest[:1] == ("lifecycle",):
            return (
                *where,
                *((lifecycle_key, p) if lifecycle_key == "lifecycle_passes" else (lifecycle_key,)),
                *rest[1:],
            )
        return (*where, *rest)

    return v2, relocate


def _migrate_v1(data: dict[str, Any]) -> tuple[dict[str, Any], Callable[[Location], Location]]:
    """v1 → v2: each mode's pooled samples become passes."""
    maps: dict[tuple[int, str], Callable[[Location], Location]] = {}
    cases = data.get("cases")
    if isinstance(cases, list):
        new_cases = []
        for i, case in enumerate(cases):
            if isinstance(case, dict) and isinstance(case.get("modes"), dict):
                modes = {}
                for name, mode in case["modes"].items():
                    modes[name], maps[(i, name)] = _v1_mode(mode, ("cases", i, "modes", name))
                case = {**case, "modes": modes}
            new_cases.append(case)
        data = {**data, "cases": new_cases}

    def relocate(loc: Location) -> Location:
        if len(loc) >= 5 and loc[0] == "cases" and loc[2] == "modes" and (loc[1], loc[3]) in maps:
            return maps[(loc[1], loc[3])](loc[4:])  # type: ignore[index]
        return loc

    return {**data, "schema_version": 2}, relocate


def record_from_data(data: Any, where: str) -> RunRecord:
    """A validated RunRecord from a results.json document of any known schema version."""
    version = _check_header(data, where)
    relocate: Callable[[Location], Location] = lambda loc: loc  # noqa: E731
    if version == 1:
        try:
            data, relocate = _migrate_v1(data)
        except ResultsFileError as err:
            raise ResultsFileError(f"{where}: {err}") from None
    if version < 3:  # v2 → v3 adds optional fields only (shape-changing cases)
        data = {**data, "schema_version": 3}
    if version < 4:  # v3 → v4 adds optional fields only (the instantiate pair, ranks)
        data = {**data, "schema_version": 4}
    if version < 5:  # v4 → v5 adds an optional field only (a pass's canary)
        data = {**data, "schema_version": 5}
    if version < 6:  # v5 → v6 adds an optional field only (a mode's kept level splits)
        data = {**data, "schema_version": 6}
    if metadata := metadata_problems(data):
        _refuse(where, [(relocate(loc), message) for loc, message in metadata])
    record: RunRecord = _validate(RunRecord, data, where, relocate)
    problems = record_problems(record) + sanity_problems(record)
    if problems:
        _refuse(where, [(relocate(loc), message) for loc, message in problems])
    return record


def record_from_bytes(raw: bytes, where: str) -> RunRecord:
    """A validated RunRecord from the bytes of a results.json of any known schema version: parsed with
    its cases validated in one pass (``document.parsed_document``), and where that pass does not read it
    or the record is refused, read the general way (``record_from_json``), so that a refusal's message
    is the same whichever way the file was read."""
    with paused_collector():
        document = parsed_document(raw)
        if document is not None:
            with contextlib.suppress(ResultsFileError):  # said again below, in the general way's words
                return record_from_data(document, where)
        return record_from_json(raw, where)


def record_from_json(raw: bytes, where: str) -> RunRecord:
    """The general way to read results.json's bytes: UTF-8, ``json.loads``, then ``record_from_data``."""
    return record_from_data(_parse_json(_decode(raw, where), where), where)


# --- the journal ----------------------------------------------------------------------------------------


class RunJournal:
    """The append-only journal of a run directory: one JSON line per record, each fsync'd.

    Lines: ``{"record": "run", "run": {...}}`` (the whole record as it stands: at the start of a run or
    of a resume), ``{"record": "pass", "pass": k, "case": {...}}`` (one case measured in pass k, counted
    from 0), ``{"record": "end", "status": ..., "finished": ...}``."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / JOURNAL
        self.bytes_written = 0

    def _write(self, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as err:  # a full disk: one line, exit 2 (a line cut short is ignored on replay)
            raise OutputError(f"cannot write {self.path}: {os_reason(err)}") from None
        self.bytes_written += len(line)

    def start(self, record: RunRecord) -> None:
        """Record the run as it stands (cases included when resuming) and compact it into results.json."""
        self._write(
            {
                "record": "run",
                "schema_version": SCHEMA_VERSION,
                "tool": TOOL_NAME,
                "run": record.model_dump(mode="json"),
            }
        )
        self._compact(record)

    def append(self, result: CaseResult, pass_index: int) -> None:
        """One case measured in one pass (the pass's own result, before it is merged with earlier passes)."""
        self._write({"record": "pass", "pass": pass_index, "case": result.model_dump(mode="json")})

    def compact(self, record: RunRecord) -> None:
        """results.json from the record (an end line first when the run has ended)."""
        if record.status != "running":
            self._write({"record": "end", "status": record.status, "finished": record.finished})
        self._compact(record)

    def _compact(self, record: RunRecord) -> None:
        size = self.path.stat().st_size
        kept = with_level_splits(record).model_copy(update={"journal_bytes": size})
        atomic_write_text(self.run_dir / RESULTS_JSON, kept.model_dump_json())


def replay_journal(path: Path) -> RunRecord:
    """The record a journal describes: its last run line, with every later pass merged in."""
    text = _decode(read_capped(path), str(path))
    lines = text.split("\n")
    if lines and lines[-1] != "":
        lines = lines[:-1]  # a last line without its newline was cut short by a crash: never recorded
    record: RunRecord | None = None
    cases: dict[tuple[str, str], CaseResult] = {}  # the record's cases by key, in order, as passes arrive
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        entry = _parse_json(line, where)
        if not isinstance(entry, dict) or entry.get("record") not in ("run", "pass", "end"):
            raise ResultsFileError(f"{where}: not a journal record (no 'record' of run, pass or end)")
        kind = entry["record"]
        if kind == "run":
            _check_header(entry, where)
            record = record_from_data(entry.get("run"), where)
            cases = {(c.scenario, c.case_id): c for c in record.cases}
            continue
        if record is None:
            raise ResultsFileError(f"{where}: a {kind} record before the run record")
        if kind == "end":
            status, finished = entry.get("status"), entry.get("finished")
            if status not in ("complete", "interrupted", "failed") or not isinstance(
                finished, (str, type(None))
            ):
                raise ResultsFileError(
                    f"{where}: status: must be complete, interrupted or failed (got {_shown(status)})"
                )
            record = record.model_copy(update={"status": status, "finished": finished})
            continue
        result: CaseResult = _validate(CaseResult, entry.get("case"), where, lambda loc: ("case", *loc))
        pass_index = entry.get("pass")
        key = (result.scenario, result.case_id)
        previous = cases.get(key)
        expected = previous.passes_done if previous is not None else 0
        if pass_index != expected:
            raise ResultsFileError(
                f"{where}: pass: case '{result.case_id}' has {expected} passes recorded; got pass {_shown(pass_index)}"
            )
        cases[key] = merge_pass(previous, result)
    if record is None:
        raise ResultsFileError(f"{path}: no run record; not a launchbench journal")
    record = record.model_copy(update={"cases": list(cases.values()), "journal_bytes": None})
    problems = record_problems(record) + sanity_problems(record)
    if problems:
        _refuse(str(path), problems)
    return record


# --- reading a run ----------------------------------------------------------------------------------------


def resolve_results_file(path: str | Path) -> Path:
    """A run directory or a results.json / results.csv / journal inside one → the results.json path."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_JSON
    elif p.name in (RESULTS_CSV, JOURNAL):
        p = p.with_name(RESULTS_JSON)
    return p


def load_run(path: str | Path) -> RunRecord:
    """Read a run (directory or results file), validating it and migrating older schemas. A run whose
    results.json is missing or holds less than its journal (crashed, or still running) is replayed from
    the journal. A run with no cases is no run (load_run_to_resume reads one). Every failure is a
    ResultsFileError whose message starts with the file's path."""
    record, source = _load(path, resolve_results_file(path))
    if not record.cases:
        raise ResultsFileError(f"{source}: cases: no cases; a run that measured nothing is not a run")
    return record


def load_run_to_resume(path: str | Path) -> RunRecord:
    """load_run for a run to resume: one that stopped before its first case (no cases) reads too."""
    return _load(path, resolve_results_file(path))[0]


def _load(path: str | Path, file: Path) -> tuple[RunRecord, Path]:
    """The record, and the file it was read from (results.json or the journal)."""
    journal = file.with_name(JOURNAL)
    has_journal = file.name == RESULTS_JSON and journal.is_file()
    if not file.exists() and not file.is_symlink():
        if has_journal:
            return replay_journal(journal), journal
        if Path(path).is_dir():
            raise ResultsFileError(f"{path}: no {RESULTS_JSON} in this directory; not a launchbench run")
    raw = read_capped(file)
    if not raw.strip():
        if has_journal:
            return replay_journal(journal), journal
        raise ResultsFileError(f"{file}: file is empty (truncated or corrupt?)")
    record = record_from_bytes(raw, str(file))
    if has_journal and journal.stat().st_size > (record.journal_bytes or 0):
        return replay_journal(journal), journal
    return record.model_copy(update={"journal_bytes": None}), file  # the store's bookkeeping, not the run's
