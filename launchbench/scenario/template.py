"""``$name`` and ``${expression}`` in a scenario's values: the names they reference, their substitution,
and a step built from its YAML mapping, the defaults it takes and the parameters of one case.

A string that is exactly ``$name`` becomes the parameter's value (a number stays a number); one that is
exactly ``${expression}`` becomes the expression's value (expr.py); inside a longer string each
``${...}`` is replaced by its value as text (a text parameter as it is: ``"run-${tag}"``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from typing import Any

from pydantic import TypeAdapter, ValidationError

from launchbench.errors import ScenarioError
from launchbench.scenario.expr import ExpressionError, evaluate, names_in
from launchbench.scenario.messages import KeyPath, ScenarioSource, format_path, validation_error
from launchbench.scenario.model import NAME, STEP_FIELDS, Step

_STEP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Step)
_REFERENCE = re.compile(rf"^\$({NAME})$")
_INLINE = re.compile(r"\$\{([^{}]*)\}")  # ${name} or ${arithmetic over names}, see expr.py
_WHOLE_EXPRESSION = re.compile(r"^\$\{([^{}]*)\}$")


def references(text: str) -> list[str]:
    """The parameter names a string uses: its ``$name``, then each ``${expression}``'s names, sorted."""
    match = _REFERENCE.match(text)
    names = [match.group(1)] if match else []
    for expression in _INLINE.findall(text):
        names.extend(sorted(names_in(expression)))
    return names


def _strings(value: Any, path: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """Every string in a YAML value (through mappings' values and lists), with its key path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, path + (index,))


def referenced(value: Any) -> set[str]:
    """Parameter names that ``$name`` and ``${expression}`` strings anywhere in ``value`` use."""
    return {name for _, text in _strings(value, ()) for name in references(text)}


def taken_defaults(raw: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The defaults a step takes: those its kind has a field for and the step does not set itself."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if not isinstance(kind, str) or kind not in STEP_FIELDS:
        return {}
    return {key: value for key, value in defaults.items() if key in STEP_FIELDS[kind] and key not in raw}


def step_references(raw: Any, defaults: dict[str, Any]) -> set[str]:
    """The parameter names a step uses, in its own values and in the defaults it takes."""
    return referenced([raw, taken_defaults(raw, defaults)])


def check_references(value: Any, known: dict[str, Any], source: ScenarioSource, path: KeyPath) -> None:
    """Every ``$name`` and every name in a ``${expression}`` is a parameter or a sweep axis."""
    for where, text in _strings(value, path):
        for name in references(text):
            if name not in known:
                raise _unknown(name, known, source, where)


def format_value(value: float | int) -> str:
    """A parameter's value as a case id and a message show it: 2.0 is '2'."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def build_step(
    raw: Any, defaults: dict[str, Any], params: dict[str, Any], source: ScenarioSource, base: KeyPath
) -> Any:
    """The step at ``base`` with the defaults it takes and ``params`` substituted, validated."""
    if not isinstance(raw, dict):
        raise source.error(f"a step must be a mapping with a 'kind', not {type(raw).__name__}", base)
    taken = taken_defaults(raw, defaults)
    from_defaults = list(taken)
    # a value taken from defaults is reported at its line in defaults
    step_source = source.with_lines(
        {base + (k,): source.lines[("defaults", k)] for k in from_defaults if ("defaults", k) in source.lines}
    )
    resolved = substitute({**raw, **taken}, params, step_source, base)
    try:
        return _STEP_ADAPTER.validate_python(resolved)
    except ValidationError as err:
        error = validation_error(err, step_source, base, Step)
        key = error.key_path.rsplit(".", 1)[-1] if error.key_path else None
        if key in from_defaults and error.key_path == format_path(base + (key,)):
            raise ScenarioError(
                source.path, f"{error.detail} (set in defaults)", error.line, error.key_path
            ) from None
        raise error from None


def substitute(value: Any, params: dict[str, Any], source: ScenarioSource, path: KeyPath) -> Any:
    """``value`` with every ``$name`` and ``${expression}`` replaced (``path``: where it stands)."""
    if isinstance(value, str):
        return _substitute_text(value, params, source, path)
    if isinstance(value, dict):
        return {k: substitute(v, params, source, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, params, source, path + (i,)) for i, v in enumerate(value)]
    return value


def _substitute_text(text: str, params: dict[str, Any], source: ScenarioSource, path: KeyPath) -> Any:
    match = _REFERENCE.match(text)
    if match:
        name = match.group(1)
        if name not in params:
            raise _unknown(name, params, source, path)
        return params[name]
    whole = _WHOLE_EXPRESSION.match(text)
    if whole:
        return _evaluate(whole.group(1), params, source, path)

    def inline(m: re.Match[str]) -> str:
        value = params.get(m.group(1).strip())
        if isinstance(value, str):  # a text parameter is spliced in as it is: "run-${tag}"
            return value
        return format_value(_evaluate(m.group(1), params, source, path))

    return _INLINE.sub(inline, text)


def _evaluate(expression: str, params: dict[str, Any], source: ScenarioSource, path: KeyPath) -> int | float:
    try:
        value = evaluate(expression, params)
    except ExpressionError as err:
        raise ScenarioError(
            source.path, f"in '${{{expression}}}': {err}", source.nearest_line(path), format_path(path)
        ) from None
    return value  # within ±expr.MAX_MAGNITUDE (1e18 < 2**63): every integer field takes it


def _unknown(name: str, params: dict[str, Any], source: ScenarioSource, path: KeyPath) -> ScenarioError:
    known = ", ".join(sorted(params)) or "none"
    close = difflib.get_close_matches(name, list(params), n=1, cutoff=0.6)
    hint = f"; did you mean '${close[0]}'?" if close else ""
    return ScenarioError(
        source.path,
        f"unknown parameter '${name}'{hint} (parameters and sweep axes: {known})",
        source.nearest_line(path),
        format_path(path),
    )
