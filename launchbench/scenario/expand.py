"""Sweep axes → cases: every combination of axis values, per chain, with a stable case id.

A chain only varies along the axes it references (``$name`` in its steps or in the defaults it takes),
so a sweep over ``size`` does not multiply a chain of empty kernels.
"""

from __future__ import annotations

import difflib
import itertools
import math
import re
from collections import ChainMap
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from launchbench.errors import ScenarioError
from launchbench.scenario.core import Case
from launchbench.scenario.expr import ExpressionError, evaluate, names_in
from launchbench.scenario.load import KeyPath, format_path, load_scenario_file, validation_error
from launchbench.scenario.model import STEP_FIELDS, Scenario, Step, SweepRange

_STEP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Step)
_REFERENCE = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)$")
_INLINE = re.compile(r"\$\{([^{}]*)\}")  # ${name} or ${arithmetic over names}, see expr.py
_WHOLE_EXPRESSION = re.compile(r"^\$\{([^{}]*)\}$")


def axis_values(axis: str, spec: list[float | int] | SweepRange) -> list[float | int]:
    if isinstance(spec, list):
        return list(dict.fromkeys(spec))
    if spec.num == 1:
        raw = [spec.start]
    elif spec.scale == "log":
        lo, hi = math.log10(spec.start), math.log10(spec.stop)
        raw = [10 ** (lo + (hi - lo) * i / (spec.num - 1)) for i in range(spec.num)]
    else:
        raw = [spec.start + (spec.stop - spec.start) * i / (spec.num - 1) for i in range(spec.num)]
    values: list[float | int] = [int(round(v)) if spec.integer else v for v in raw]
    return list(dict.fromkeys(values))


def expand_scenario(path: str | Path, max_cases: int | None = None) -> list[Case]:
    """Load a scenario file and expand it into validated cases."""
    loaded = load_scenario_file(path)
    return expand_loaded(loaded.scenario, loaded.file, loaded.lines, max_cases)


def expand_loaded(
    scenario: Scenario, file: str, lines: dict[KeyPath, int], max_cases: int | None = None
) -> list[Case]:
    limit = max_cases if max_cases is not None else scenario.max_cases
    axes = {name: axis_values(name, spec) for name, spec in scenario.sweep.items()}
    single = ("chains",) not in lines and ("chain",) in lines  # the file says `chain:`, validated as chains.chain

    def chain_base(chain_name: str) -> KeyPath:
        return ("chain",) if single else ("chains", chain_name)

    known: dict[str, Any] = {**scenario.params, **axes}
    _check_references(scenario.defaults, known, file, lines, ("defaults",))
    chain_axes_of: dict[str, list[str]] = {}
    for chain_name, raw_steps in scenario.chains.items():
        _check_references(raw_steps, known, file, lines, chain_base(chain_name))
        taken = [_taken_defaults(raw, scenario.defaults) for raw in raw_steps]
        used = _referenced([raw_steps, taken]) & set(axes)
        chain_axes_of[chain_name] = [a for a in axes if a in used]
    total = sum(math.prod(len(axes[a]) for a in chain_axes) for chain_axes in chain_axes_of.values())
    if total > limit:
        raise ScenarioError(
            file,
            f"the sweep makes {total:,} cases, above the limit of {limit:,} "
            "(raise max_cases in the file or pass --max-cases to allow it)",
            lines.get(("sweep",)),
            "sweep",
        )
    for name in axes:
        if name in scenario.params and not isinstance(scenario.params[name], (int, float)):
            raise ScenarioError(
                file, f"sweep axis '{name}' overrides a non-numeric parameter", lines.get(("sweep", name)), f"sweep.{name}"
            )
    cases: list[Case] = []
    for chain_name, raw_steps in scenario.chains.items():
        chain_axes = chain_axes_of[chain_name]
        for combo in itertools.product(*(axes[a] for a in chain_axes)):
            params = dict(scenario.params)
            params.update(zip(chain_axes, combo))
            suffix = ",".join(f"{a}={_fmt(v)}" for a, v in zip(chain_axes, combo))
            case_id = f"{chain_name}/{suffix}" if suffix else chain_name
            try:
                steps = tuple(
                    _build_step(raw, scenario.defaults, params, file, lines, chain_base(chain_name) + (index,))
                    for index, raw in enumerate(raw_steps)
                )
            except ScenarioError as err:
                if not chain_axes:
                    raise
                raise ScenarioError(err.file, f"{err.detail} (in case '{case_id}')", err.line, err.key_path) from None
            cases.append(
                Case(
                    scenario=scenario.name,
                    chain=chain_name,
                    case_id=case_id,
                    params={a: v for a, v in zip(chain_axes, combo)},
                    steps=steps,
                    measure=scenario.measure,
                    source=file,
                    axes=tuple(chain_axes),
                )
            )
    return cases


def _fmt(value: float | int) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _taken_defaults(raw: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The defaults a step takes: those its kind has a field for and the step does not set itself."""
    kind = raw.get("kind") if isinstance(raw, dict) else None
    if not isinstance(kind, str) or kind not in STEP_FIELDS:
        return {}
    return {key: value for key, value in defaults.items() if key in STEP_FIELDS[kind] and key not in raw}


def _referenced(value: Any) -> set[str]:
    """Parameter names that ``$name`` and ``${expression}`` strings anywhere in ``value`` use."""
    names: set[str] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            match = _REFERENCE.match(value)
            if match:
                names.add(match.group(1))
            for expression in _INLINE.findall(value):
                names.update(names_in(expression))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(value)
    return names


def _build_step(
    raw: Any, defaults: dict[str, Any], params: dict[str, Any], file: str, lines: dict[KeyPath, int], base: KeyPath
) -> Any:
    if not isinstance(raw, dict):
        raise ScenarioError(file, f"a step must be a mapping with a 'kind', not {type(raw).__name__}", lines.get(base), format_path(base))
    taken = _taken_defaults(raw, defaults)
    merged = {**raw, **taken}
    from_defaults = list(taken)
    # a value taken from defaults is reported at its line in defaults
    step_lines = ChainMap({base + (k,): lines[("defaults", k)] for k in from_defaults if ("defaults", k) in lines}, lines)
    resolved = _substitute(merged, params, file, step_lines, base)  # type: ignore[arg-type]
    try:
        return _STEP_ADAPTER.validate_python(resolved)
    except ValidationError as err:
        error = validation_error(err, file, step_lines, base, None)  # type: ignore[arg-type]
        key = error.key_path.rsplit(".", 1)[-1] if error.key_path else None
        if key in from_defaults and error.key_path == format_path(base + (key,)):
            raise ScenarioError(file, f"{error.detail} (set in defaults)", error.line, error.key_path) from None
        raise error from None


def _substitute(value: Any, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath) -> Any:
    if isinstance(value, str):
        match = _REFERENCE.match(value)
        if match:
            name = match.group(1)
            if name not in params:
                raise _unknown(name, params, file, lines, path)
            return params[name]

        whole = _WHOLE_EXPRESSION.match(value)
        if whole:
            return _evaluate(whole.group(1), params, file, lines, path)

        def inline(m: re.Match[str]) -> str:
            text = params.get(m.group(1).strip())
            if isinstance(text, str):  # a text parameter is spliced in as it is: "run-${tag}"
                return text
            return _fmt(_evaluate(m.group(1), params, file, lines, path))

        return _INLINE.sub(inline, value)
    if isinstance(value, dict):
        return {k: _substitute(v, params, file, lines, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, params, file, lines, path + (i,)) for i, v in enumerate(value)]
    return value


def _evaluate(expression: str, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath) -> int | float:
    try:
        value = evaluate(expression, params)
    except ExpressionError as err:
        raise ScenarioError(file, f"in '${{{expression}}}': {err}", _nearest_line(lines, path), format_path(path)) from None
    return value  # within ±expr.MAX_MAGNITUDE (1e18 < 2**63): every integer field takes it


def _nearest_line(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


def _unknown(name: str, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath) -> ScenarioError:
    line = _nearest_line(lines, path)
    known = ", ".join(sorted(params)) or "none"
    close = difflib.get_close_matches(name, list(params), n=1, cutoff=0.6)
    hint = f"; did you mean '${close[0]}'?" if close else ""
    return ScenarioError(file, f"unknown parameter '${name}'{hint} (parameters and sweep axes: {known})", line, format_path(path))


def _check_references(value: Any, known: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath) -> None:
    """Every ``$name`` and every name in a ``${expression}`` is a parameter or a sweep axis."""
    if isinstance(value, str):
        match = _REFERENCE.match(value)
        names = [match.group(1)] if match else []
        for expression in _INLINE.findall(value):
            names.extend(sorted(names_in(expression)))
        for name in names:
            if name not in known:
                raise _unknown(name, known, file, lines, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_references(item, known, file, lines, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_references(item, known, file, lines, path + (index,))
