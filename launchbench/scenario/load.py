"""YAML scenario file → validated Scenario, every error naming the file, the line and the key path."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from launchbench.errors import ScenarioError
from launchbench.scenario.model import Scenario

MAX_FILE_BYTES = 4 * 1024 * 1024

KeyPath = tuple[Any, ...]


@dataclass(frozen=True)
class ScenarioFile:
    """A validated scenario with where it came from and the line of every key."""

    file: str
    scenario: Scenario
    lines: dict[KeyPath, int]


def load_scenario_file(path: str | Path) -> ScenarioFile:
    """Read, parse and validate one scenario file (the chains' steps are checked in expand.py)."""
    path = Path(path)
    text = _read_text(path)
    data, lines = parse_yaml(text, str(path))
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as err:
        raise validation_error(err, str(path), lines, (), Scenario) from None
    return ScenarioFile(str(path), scenario, lines)


def load_scenario(path: str | Path) -> Scenario:
    return load_scenario_file(path).scenario


def _read_text(path: Path) -> str:
    if not path.exists():
        raise ScenarioError(str(path), "no such file")
    if path.is_dir():
        raise ScenarioError(str(path), "is a directory, not a scenario file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ScenarioError(str(path), f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB; not a scenario")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(str(path), f"not UTF-8 text ({err.reason} at byte {err.start})") from None


def parse_yaml(text: str, file: str) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """Parse with the safe loader; return the mapping and a map from key path to 1-based line."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as err:
        line = err.problem_mark.line + 1 if err.problem_mark else None
        raise ScenarioError(file, f"YAML tag not allowed: {err.problem}", line) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ScenarioError(file, f"not valid YAML: {problem}", line) from None
    except RecursionError:
        raise ScenarioError(file, "YAML nested too deeply") from None
    if node is None or data is None:
        raise ScenarioError(file, "file is empty; a scenario needs name, description and chains")
    if not isinstance(data, dict):
        raise ScenarioError(file, f"a scenario must be a YAML mapping, not a {type(data).__name__}", node.start_mark.line + 1)
    lines: dict[KeyPath, int] = {}
    _index_lines(node, (), lines, file)
    return data, lines


def _index_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], file: str) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                raise ScenarioError(file, f"duplicate key '{key}'", key_node.start_mark.line + 1, _format_path(path + (key,)))
            seen.add(key)
            lines[path + (key,)] = key_node.start_mark.line + 1
            _index_lines(value_node, path + (key,), lines, file)
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _index_lines(item, path + (index,), lines, file)


def _format_path(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def locate(loc: Iterable[Any], base: KeyPath, lines: dict[KeyPath, int]) -> tuple[KeyPath, int | None]:
    """Map a pydantic error location to the deepest key path that exists in the file, and its line.

    Pydantic adds union tags (the step kind, 'int', 'list[...]') to locations; they are skipped when
    they are not keys in the document.
    """
    path = base
    for part in loc:
        if path + (part,) in lines:
            path = path + (part,)
    return path, lines.get(path)


def validation_error(
    err: ValidationError, file: str, lines: dict[KeyPath, int], base: KeyPath, model: type[BaseModel] | None
) -> ScenarioError:
    """Turn the first pydantic error into a ScenarioError with line, key path and a suggestion."""
    errors = err.errors(include_url=False)
    priority = {"union_tag_invalid": 0, "union_tag_not_found": 0, "extra_forbidden": 1}
    first = min(errors, key=lambda e: priority.get(e["type"], 2))
    loc = tuple(first["loc"])
    path, line = locate(loc, base, lines)
    message = first["msg"]
    if first["type"] == "extra_forbidden":
        key = loc[-1]
        path = path if path and path[-1] == key else path + (key,)
        line = lines.get(path, line)
        message = f"unknown key '{key}'"
        allowed = _allowed_keys(first, model, loc)
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        if close:
            message += f"; did you mean '{close[0]}'?"
        elif allowed:
            message += f" (allowed: {', '.join(sorted(allowed))})"
    elif first["type"] == "union_tag_invalid":
        message = f"unknown step kind {first['ctx']['tag']!r}; kinds: {first['ctx']['expected_tags']}"
        path = path + ("kind",) if path + ("kind",) in lines else path
        line = lines.get(path, line)
    elif first["type"] == "union_tag_not_found":
        message = "a step needs a 'kind'"
    elif first["type"] == "missing":
        message = f"missing required key '{loc[-1]}'"
    more = len(errors) - 1
    if more:
        message += f" (and {more} more error{'s' if more > 1 else ''})"
    return ScenarioError(file, message, line, _format_path(path) or None)


def _allowed_keys(error: dict[str, Any], model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The field names valid where an unknown key stood (walking the model along the location)."""
    from launchbench.scenario.model import STEP_FIELDS

    for part in loc[:-1]:
        if isinstance(part, str) and part in STEP_FIELDS:
            return STEP_FIELDS[part]
    if model is None:
        return []
    current: Any = model
    for part in loc[:-1]:
        fields = getattr(current, "model_fields", None)
        if fields is None or part not in fields:
            continue
        annotation = fields[part].annotation
        current = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
        if current is None:
            return []
    fields = getattr(current, "model_fields", {})
    return [name for name in fields if name != "kind"] + (["chain"] if current is Scenario else [])
