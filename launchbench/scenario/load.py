"""A scenario file → validated Scenario, every error naming the file, the line and the key path.

The file is read with a bounded size and parsed by yaml_safe.py (a safe, bounded loader with a line
index); messages.py turns pydantic's errors into one line at the key that is wrong.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from launchbench.errors import ScenarioError
from launchbench.files import read_regular_file
from launchbench.scenario.messages import KeyPath, ScenarioSource, format_path, oneline, validation_error
from launchbench.scenario.model import STEP_FIELDS, Scenario
from launchbench.scenario.yaml_safe import parse_yaml

MAX_FILE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ScenarioFile:
    """A validated scenario with where it came from and the line of every key."""

    file: str
    scenario: Scenario
    lines: dict[KeyPath, int]
    sha256: str  # of the bytes that were read: what the run records it measured

    @property
    def source(self) -> ScenarioSource:
        return ScenarioSource(self.file, self.lines)


def load_scenario_file(path: str | Path, precheck: Callable[[str, str], None] | None = None) -> ScenarioFile:
    """Read, parse and validate one scenario file (the chains' steps are checked in expand.py).
    ``precheck(text, file)`` runs on the text before it is parsed (sweep.py bounds the expansion there)."""
    path = Path(path)
    file = str(path)
    text = _read_text(path)
    if precheck is not None:
        precheck(text, file)
    data, lines = parse_yaml(text, file)
    source = ScenarioSource(file, lines)
    if "chain" in data and "chains" in data:
        raise source.error("give either 'chain' (one chain) or 'chains' (named chains), not both", ("chain",))
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, source, (), Scenario) from None
    _check_defaults(scenario, source)
    return ScenarioFile(file, scenario, lines, hashlib.sha256(text.encode("utf-8")).hexdigest())


def load_scenario(path: str | Path) -> Scenario:
    return load_scenario_file(path).scenario


def _read_text(path: Path) -> str:
    file = str(path)
    raw = read_regular_file(
        path, MAX_FILE_BYTES, lambda message: ScenarioError(file, message), "a scenario file"
    )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise ScenarioError(
            file, f"not UTF-8 text ({err.reason} at byte {err.start}); is it a binary file?", line
        ) from None


def _check_defaults(scenario: Scenario, source: ScenarioSource) -> None:
    allowed = sorted({name for fields in STEP_FIELDS.values() for name in fields} - {"kind"})
    for key in scenario.defaults:
        line = source.lines.get(("defaults", key), source.lines.get(("defaults",)))
        where = oneline(format_path(("defaults", key)))
        if key == "kind":
            raise ScenarioError(
                source.path, "defaults cannot set 'kind': every step names its own kind", line, where
            )
        if key not in allowed:
            message = f"unknown key '{key}' in defaults (no step kind takes it)"
            close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
            message += f"; did you mean '{close[0]}'?" if close else f" (step keys: {', '.join(allowed)})"
            raise ScenarioError(source.path, oneline(message), line, where)
