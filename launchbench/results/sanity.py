"""What a results record cannot hold, beyond the types and ranges of its fields (schema.py) and the
checks across them (schema.record_problems): the checks every reader of a run applies (store.load_run).

- Counts: a measured mode (status ok or budget) holds one pass per pass its case ran, and every one of
  those passes holds wall-time samples; a pass's pooled view is what compare, check, plot and the
  history read, so a mode whose samples were removed is refused rather than shown as "no samples".
- Physical bounds: a time in seconds is 0 or at least ``MIN_TIME_S`` (a picosecond); a per-iteration
  sample is at most ``MAX_SAMPLE_S``. Whole numbers are at most ``MAX_WHOLE`` (2^53, the largest a
  float holds exactly; schema.Count). Numbers anywhere in the free-form parts (environment, settings,
  a case's params) are finite.
- Types: the environment's and settings' known keys have the types launchbench writes (``ENVIRONMENT``,
  ``SETTINGS``); other keys may hold any JSON.
- Text: case ids, scenario and chain names hold no control characters (newlines, escapes, bidirectional
  overrides such as U+202E): they are printed into tables, step summaries and file names.

Each problem comes with its location in the record (a JSON path as a tuple) and a message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from launchbench.printable import control_characters
from launchbench.results.schema import MAX_WHOLE, MEASURED_STATUSES, WALL, Location, ModePass, RunRecord

MIN_TIME_S = 1e-12  # a nonzero time below a picosecond is not a measurement
MAX_SAMPLE_S = 1e4  # seconds per iteration: a launch-overhead sample of hours is not a measurement

Problems = list[tuple[Location, str]]

_TEXT = (str, type(None))
_WHOLE = (int, type(None))
_NUMBER = (int, float, type(None))
_FLAG = (bool, type(None))
# key → the types its value may have, or a nested table for an object
ENVIRONMENT: dict[str, Any] = {
    "gpu": {
        "name": _TEXT,
        "uuid": _TEXT,
        "index": _WHOLE,
        "compute_capability": _TEXT,
        "multiprocessors": _WHOLE,
        "memory_bytes": _WHOLE,
    },
    "host": {"cpu": _TEXT, "cores": _WHOLE, "platform": _TEXT, "hostname": _TEXT},
    "clocks": {"sm_mhz": _NUMBER, "mem_mhz": _NUMBER, "sm_max_mhz": _NUMBER, "mem_max_mhz": _NUMBER},
    **dict.fromkeys(
        ("python", "launchbench", "git_commit", "time", "driver", "cuda_runtime", "cuda_driver", "cupy"),
        _TEXT,
    ),
    **dict.fromkeys(("numpy", "cuda_bindings", "capture_timing", "cupy_build"), _TEXT),
    "nvml": _FLAG,
    "device_count": _WHOLE,
}
SETTINGS: dict[str, Any] = {
    "overrides": {},
    "isolate": _FLAG,
    "device": _WHOLE,
    "ab": {"side": _TEXT, "id": _TEXT, "paired_with": _TEXT},
}
_TYPE_WORDS = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _type_problems(data: Mapping[str, Any], table: Mapping[str, Any], where: Location) -> Problems:
    problems: Problems = []
    for key, expected in table.items():
        if key not in data:
            continue
        value, loc = data[key], (*where, key)
        if isinstance(expected, dict):
            if not isinstance(value, dict):
                problems.append((loc, f"must be an object (got {_shown(value)})"))
            else:
                problems += _type_problems(value, expected, loc)
            continue
        wrong_bool = isinstance(value, bool) and bool not in expected
        if wrong_bool or not isinstance(value, expected):
            words = " or ".join(_TYPE_WORDS[t] for t in expected if t in _TYPE_WORDS)
            problems.append((loc, f"must be {words} (got {_shown(value)})"))
    return problems


def _json_problems(value: Any, where: Location) -> Problems:
    """Non-finite numbers and whole numbers beyond MAX_WHOLE anywhere in a free-form JSON value."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, float) and not math.isfinite(value):
        return [(where, f"must be finite (got {value!r})")]
    if isinstance(value, int) and abs(value) > MAX_WHOLE:
        return [(where, f"must be at most 2^53 (got a number of {len(str(abs(value)))} digits)")]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _json_problems(item, (*where, str(key)))]
    if isinstance(value, list):
        return [p for k, item in enumerate(value) for p in _json_problems(item, (*where, k))]
    return []


def _text_problems(text: str, where: Location) -> Problems:
    if text.isprintable():  # false for every character of Cc, Cf, Zl and Zp (and for a few others)
        return []
    found = control_characters(text)
    if not found:
        return []
    return [(where, f"holds control character(s) {', '.join(dict.fromkeys(found))}; not a name")]


def _sample_problems(one: ModePass, where: Location) -> Problems:
    problems: Problems = []
    for key, values in one.samples.items():
        if values and not (min(values) >= MIN_TIME_S and max(values) <= MAX_SAMPLE_S):
            problems += _bound_problems((*where, "samples", key), values)
    for k, rank in enumerate(one.ranks):
        for key, values in rank.samples.items():
            if values and not (min(values) >= MIN_TIME_S and max(values) <= MAX_SAMPLE_S):
                problems += _bound_problems((*where, "ranks", k, "samples", key), values)
    return problems  # the usual case (every series within its bounds) decided at C speed


def _bound_problems(loc: Location, values: list[float]) -> Problems:
    """The first sample of a series beyond the physical bounds, if any."""
    for k, v in enumerate(values):
        if 0 < v < MIN_TIME_S or v > MAX_SAMPLE_S:
            bound = (
                f"0 or at least {MIN_TIME_S:g} s"
                if v < MIN_TIME_S
                else f"at most {MAX_SAMPLE_S:g} s per iteration"
            )
            return [((*loc, k), f"must be {bound} (got {v!r})")]
    return []


def _mode_problems(record: RunRecord, i: int) -> Problems:
    case = record.cases[i]
    problems: Problems = []
    for name, mode in case.modes.items():
        where: Location = ("cases", i, "modes", name, "passes")
        for j, one in enumerate(mode.passes):
            problems += _sample_problems(one, (*where, j))
        if mode.status not in MEASURED_STATUSES:
            continue
        measured = f"the mode's status '{mode.status}' says it was measured"
        if len(mode.passes) < case.passes_done:
            problems.append(
                (where, f"holds {len(mode.passes)} passes; the case ran {case.passes_done} ({measured})")
            )
        for j, one in enumerate(mode.passes):
            if one.size == 0:
                problems.append(((*where, j, "samples", WALL), f"holds no samples ({measured})"))
    return problems


def metadata_problems(data: Mapping[str, Any]) -> Problems:
    """The types of a results document's environment and settings, read before the record is built from
    it (the models would take a GPU given as its name for its layout, or refuse in their own words)."""
    problems: Problems = []
    for part, table in (("environment", ENVIRONMENT), ("settings", SETTINGS)):
        if isinstance(data.get(part), dict):
            problems += _type_problems(data[part], table, (part,))
    return problems


def sanity_problems(record: RunRecord) -> Problems:
    """Everything above but the metadata's types (``metadata_problems``), for one record (its cases may
    be none: see store.load_run)."""
    problems: Problems = []
    for part in ("environment", "settings"):
        problems += _json_problems(getattr(record, part).model_dump(mode="json"), (part,))
    for k, info in enumerate(record.scenarios):
        problems += _text_problems(info.name, ("scenarios", k, "name"))
    for i, case in enumerate(record.cases):
        for key in ("scenario", "case_id", "chain"):
            problems += _text_problems(getattr(case, key), ("cases", i, key))
        problems += _json_problems(case.params, ("cases", i, "params"))
        problems += _mode_problems(record, i)
    return problems
