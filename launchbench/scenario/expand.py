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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from launchbench.errors import ScenarioError
from launchbench.scenario import prescan
from launchbench.scenario.core import Case
from launchbench.scenario.expr import ExpressionError, evaluate, names_in
from launchbench.scenario.load import KeyPath, ScenarioFile, format_path, load_scenario_file, validation_error
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


MAX_EXPANDED_STEPS = (
    200_000  # steps over all cases of a file (cases × steps per chain): what expansion builds
)
MAX_LAUNCHES_PER_ITER = 1_000_000  # launches one iteration of one case issues (seconds of launching, eagerly)


def expand_scenario(path: str | Path, max_cases: int | None = None) -> list[Case]:
    """Load a scenario file and expand it into validated cases."""
    loaded = load_bounded(path, max_cases)
    return expand_loaded(loaded.scenario, loaded.file, loaded.lines, max_cases)


def load_bounded(path: str | Path, max_cases: int | None = None) -> ScenarioFile:
    """Load a scenario file, refusing a sweep that is sure to exceed the limits before the document is
    built (prescan.py), so that refusing a large file costs less than loading it."""
    return load_scenario_file(path, precheck=lambda text, file: _precheck(text, file, max_cases))


def _range_size(spec: dict[str, str]) -> int | None:
    def scalar(text: str) -> Any:
        if text in ("true", "false"):
            return text == "true"
        try:
            return int(text, 10)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                return text

    try:
        sweep_range = SweepRange.model_validate({key: scalar(value) for key, value in spec.items()})
    except ValidationError:
        return None
    return len(axis_values("", sweep_range))


def _precheck(text: str, file: str, max_cases: int | None) -> None:
    counts = prescan.count(text, _range_size)
    if counts is None:
        return
    limit = (
        max_cases if max_cases is not None else counts.max_cases or Scenario.model_fields["max_cases"].default
    )
    if limit < 1:
        return
    per_chain = {name: counts.cases_of(chain) for name, chain in counts.chains.items()}
    total = sum(per_chain.values())
    if total > limit:
        raise ScenarioError(file, _too_many_cases(total, limit), counts.sweep_line, "sweep")
    steps = {name: per_chain[name] * chain.steps for name, chain in counts.chains.items()}
    if sum(steps.values()) > MAX_EXPANDED_STEPS:
        biggest = max(steps, key=lambda name: steps[name])
        chain = counts.chains[biggest]
        where = "chain" if counts.single else f"chains.{biggest}"
        raise ScenarioError(
            file,
            _too_many_steps(sum(steps.values()), total, biggest, per_chain[biggest], chain.steps),
            chain.line,
            where,
        )


def _too_many_cases(total: int, limit: int) -> str:
    return (
        f"the sweep makes {total:,} cases, above the limit of {limit:,} "
        "(raise max_cases in the file or pass --max-cases to allow it)"
    )


def _too_many_steps(steps: int, total: int, chain: str, cases: int, chain_steps: int) -> str:
    return (
        f"the sweep makes {steps:,} steps over its {total:,} cases (chain '{chain}': {cases:,} cases × "
        f"{chain_steps:,} steps), above the limit of {MAX_EXPANDED_STEPS:,}; "
        "use a step's repeat for long chains of one kind, or split the sweep"
    )


def expand_loaded(
    scenario: Scenario, file: str, lines: dict[KeyPath, int], max_cases: int | None = None
) -> list[Case]:
    return list(iter_cases(scenario, file, lines, max_cases))


@dataclass(frozen=True)
class Expansion:
    """What expanding a scenario will build, known before anything is built."""

    cases: int
    steps: int  # over all cases
    chain_axes: dict[str, list[str]]
    axes: dict[str, list[float | int]]

    def case_ids(self, scenario: Scenario) -> Iterator[str]:
        for chain_name in scenario.chains:
            chain_axes = self.chain_axes[chain_name]
            for combo in itertools.product(*(self.axes[a] for a in chain_axes)):
                yield _case_id(chain_name, chain_axes, combo)


def plan_expansion(
    scenario: Scenario, file: str, lines: dict[KeyPath, int], max_cases: int | None = None
) -> Expansion:
    """Check references and sizes, and count the cases and steps the sweep makes, building none of them:
    a sweep beyond ``max_cases`` cases (the file's max_cases by default) or MAX_EXPANDED_STEPS steps is
    refused here, in time that grows with the file, not with the sweep."""
    limit = max_cases if max_cases is not None else scenario.max_cases
    axes = {name: axis_values(name, spec) for name, spec in scenario.sweep.items()}
    single = _single(lines)
    known: dict[str, Any] = {**scenario.params, **axes}
    _check_references(scenario.defaults, known, file, lines, ("defaults",))
    chain_axes_of: dict[str, list[str]] = {}
    for chain_name, raw_steps in scenario.chains.items():
        _check_references(raw_steps, known, file, lines, _chain_base(single, chain_name))
        taken = [_taken_defaults(raw, scenario.defaults) for raw in raw_steps]
        used = _referenced([raw_steps, taken]) & set(axes)
        chain_axes_of[chain_name] = [a for a in axes if a in used]
    per_chain = {
        name: math.prod(len(axes[a]) for a in chain_axes) for name, chain_axes in chain_axes_of.items()
    }
    total = sum(per_chain.values())
    if total > limit:
        raise ScenarioError(file, _too_many_cases(total, limit), lines.get(("sweep",)), "sweep")
    steps = sum(per_chain[name] * len(raw_steps) for name, raw_steps in scenario.chains.items())
    if steps > MAX_EXPANDED_STEPS:
        biggest = max(scenario.chains, key=lambda name: per_chain[name] * len(scenario.chains[name]))
        raise ScenarioError(
            file,
            _too_many_steps(steps, total, biggest, per_chain[biggest], len(scenario.chains[biggest])),
            lines.get(_chain_base(single, biggest)),
            format_path(_chain_base(single, biggest)),
        )
    for name in axes:
        if name in scenario.params and not isinstance(scenario.params[name], (int, float)):
            raise ScenarioError(
                file,
                f"sweep axis '{name}' overrides a non-numeric parameter",
                lines.get(("sweep", name)),
                f"sweep.{name}",
            )
    return Expansion(total, steps, chain_axes_of, axes)


def iter_cases(
    scenario: Scenario, file: str, lines: dict[KeyPath, int], max_cases: int | None = None
) -> Iterator[Case]:
    """The cases of a scenario, one at a time, after plan_expansion has bounded them. A step that uses no
    sweep axis of its chain is validated once and shared by every case of the chain."""
    expansion = plan_expansion(scenario, file, lines, max_cases)
    single = _single(lines)
    for chain_name, raw_steps in scenario.chains.items():
        chain_axes = expansion.chain_axes[chain_name]
        base = _chain_base(single, chain_name)
        varying = [
            bool(_referenced([raw, _taken_defaults(raw, scenario.defaults)]) & set(chain_axes))
            for raw in raw_steps
        ]
        fixed: dict[int, Any] = {}
        for combo in itertools.product(*(expansion.axes[a] for a in chain_axes)):
            params = dict(scenario.params)
            params.update(zip(chain_axes, combo))
            case_id = _case_id(chain_name, chain_axes, combo)
            try:
                built = []
                for index, raw in enumerate(raw_steps):
                    if varying[index]:
                        built.append(
                            _build_step(raw, scenario.defaults, params, file, lines, base + (index,))
                        )
                    else:
                        if index not in fixed:
                            fixed[index] = _build_step(
                                raw, scenario.defaults, params, file, lines, base + (index,)
                            )
                        built.append(fixed[index])
                steps = tuple(built)
            except ScenarioError as err:
                if not chain_axes:
                    raise
                raise ScenarioError(
                    err.file, f"{err.detail} (in case '{case_id}')", err.line, err.key_path
                ) from None
            launches = sum(step.launches() for step in steps)
            if launches > MAX_LAUNCHES_PER_ITER:
                where = f" (in case '{case_id}')" if chain_axes else ""
                raise ScenarioError(
                    file,
                    f"one iteration of the chain issues {launches:,} launches{where}, above the limit of "
                    f"{MAX_LAUNCHES_PER_ITER:,}",
                    lines.get(base),
                    format_path(base),
                )
            yield Case(
                scenario=scenario.name,
                chain=chain_name,
                case_id=case_id,
                params={a: v for a, v in zip(chain_axes, combo)},
                steps=steps,
                measure=scenario.measure,
                source=file,
                axes=tuple(chain_axes),
            )


def _single(lines: dict[KeyPath, int]) -> bool:
    """The file says `chain:` (validated as chains.chain)."""
    return ("chains",) not in lines and ("chain",) in lines


def _chain_base(single: bool, chain_name: str) -> KeyPath:
    return ("chain",) if single else ("chains", chain_name)


def _case_id(chain_name: str, chain_axes: list[str], combo: tuple[Any, ...]) -> str:
    suffix = ",".join(f"{a}={_fmt(v)}" for a, v in zip(chain_axes, combo))
    return f"{chain_name}/{suffix}" if suffix else chain_name


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
    raw: Any,
    defaults: dict[str, Any],
    params: dict[str, Any],
    file: str,
    lines: dict[KeyPath, int],
    base: KeyPath,
) -> Any:
    if not isinstance(raw, dict):
        raise ScenarioError(
            file,
            f"a step must be a mapping with a 'kind', not {type(raw).__name__}",
            lines.get(base),
            format_path(base),
        )
    taken = _taken_defaults(raw, defaults)
    merged = {**raw, **taken}
    from_defaults = list(taken)
    # a value taken from defaults is reported at its line in defaults
    step_lines = ChainMap(
        {base + (k,): lines[("defaults", k)] for k in from_defaults if ("defaults", k) in lines}, lines
    )
    resolved = _substitute(merged, params, file, step_lines, base)  # type: ignore[arg-type]
    try:
        return _STEP_ADAPTER.validate_python(resolved)
    except ValidationError as err:
        error = validation_error(err, file, step_lines, base, None)  # type: ignore[arg-type]
        key = error.key_path.rsplit(".", 1)[-1] if error.key_path else None
        if key in from_defaults and error.key_path == format_path(base + (key,)):
            raise ScenarioError(
                file, f"{error.detail} (set in defaults)", error.line, error.key_path
            ) from None
        raise error from None


def _substitute(
    value: Any, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath
) -> Any:
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


def _evaluate(
    expression: str, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath
) -> int | float:
    try:
        value = evaluate(expression, params)
    except ExpressionError as err:
        raise ScenarioError(
            file, f"in '${{{expression}}}': {err}", _nearest_line(lines, path), format_path(path)
        ) from None
    return value  # within ±expr.MAX_MAGNITUDE (1e18 < 2**63): every integer field takes it


def _nearest_line(lines: dict[KeyPath, int], path: KeyPath) -> int | None:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return None


def _unknown(
    name: str, params: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath
) -> ScenarioError:
    line = _nearest_line(lines, path)
    known = ", ".join(sorted(params)) or "none"
    close = difflib.get_close_matches(name, list(params), n=1, cutoff=0.6)
    hint = f"; did you mean '${close[0]}'?" if close else ""
    return ScenarioError(
        file,
        f"unknown parameter '${name}'{hint} (parameters and sweep axes: {known})",
        line,
        format_path(path),
    )


def _check_references(
    value: Any, known: dict[str, Any], file: str, lines: dict[KeyPath, int], path: KeyPath
) -> None:
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
