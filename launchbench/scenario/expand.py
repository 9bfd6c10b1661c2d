"""Sweep axes → cases: every combination of axis values, per chain, with a stable case id.

A chain only varies along the axes it references (``$name`` in its steps or in the defaults it takes),
so a sweep over ``size`` does not multiply a chain of empty kernels.
"""

from __future__ import annotations

import difflib
import itertools
import math
import random
import re
from collections import ChainMap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from launchbench.errors import ScenarioError
from launchbench.kinds.fields import MAX_BYTES
from launchbench.kinds.registry import spec_of, step_bytes
from launchbench.scenario import prescan
from launchbench.scenario.core import Case, ShapePlan
from launchbench.scenario.expr import ExpressionError, evaluate, names_in
from launchbench.scenario.load import KeyPath, ScenarioFile, format_path, load_scenario_file, validation_error
from launchbench.scenario.model import STEP_FIELDS, Scenario, Shapes, Step, SweepRange

_STEP_ADAPTER: TypeAdapter[Any] = TypeAdapter(Step)
SHAPE_SEED = 1  # `order: shuffle` is the same permutation in every run
MAX_CASE_BYTES = MAX_BYTES  # a shape-changing case's buffers over all its shapes (more than a GPU holds)
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
    steps: int  # over all cases (one shape of each shape-changing case)
    chain_axes: dict[str, list[str]]
    axes: dict[str, list[float | int]]
    shape_chains: frozenset[str] = frozenset()  # chains whose steps use the shape parameter

    @property
    def unused_axes(self) -> list[str]:
        """Sweep axes no chain varies along (no step or default it takes references them)."""
        used = {a for chain_axes in self.chain_axes.values() for a in chain_axes}
        return [a for a in self.axes if a not in used]

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
    if scenario.devices > 1 and scenario.shapes is not None:
        raise ScenarioError(
            file,
            "a scenario on several GPUs (devices) keeps its sizes: drop 'shapes' or set 'devices: 1'",
            lines.get(("devices",)),
            "devices",
        )
    axes = {name: axis_values(name, spec) for name, spec in scenario.sweep.items()}
    single = _single(lines)
    known: dict[str, Any] = {**scenario.params, **axes}
    shape_param = _shape_param(scenario, file, lines)
    shape_axes: set[str] = set()
    in_steps = known
    if shape_param is not None:
        assert scenario.shapes is not None
        _check_references(scenario.shapes, known, file, lines, ("shapes",))
        shape_axes = _referenced(scenario.shapes) & set(axes)
        in_steps = {**known, shape_param: 1}
    _check_references(scenario.defaults, in_steps, file, lines, ("defaults",))
    chain_axes_of: dict[str, list[str]] = {}
    shape_chains: set[str] = set()
    for chain_name, raw_steps in scenario.chains.items():
        _check_references(raw_steps, in_steps, file, lines, _chain_base(single, chain_name))
        taken = [_taken_defaults(raw, scenario.defaults) for raw in raw_steps]
        referenced = _referenced([raw_steps, taken])
        used = referenced & set(axes)
        if shape_param is not None and shape_param in referenced:
            shape_chains.add(chain_name)
            used |= shape_axes
        chain_axes_of[chain_name] = [a for a in axes if a in used]
    if shape_param is not None and not shape_chains:
        raise ScenarioError(
            file,
            f"no chain uses ${shape_param}, so no size changes; reference it in a step (e.g. size: ${shape_param})",
            lines.get(("shapes", "param")),
            "shapes.param",
        )
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
    return Expansion(total, steps, chain_axes_of, axes, frozenset(shape_chains))


def sweep_warnings(loaded: ScenarioFile, max_cases: int | None = None) -> list[str]:
    """One line per sweep axis that no step uses (it makes no case: a misspelt ``$name``?), with the
    file, line and key, for validate and run to print as warnings."""
    expansion = plan_expansion(loaded.scenario, loaded.file, loaded.lines, max_cases)
    warnings = []
    for name in expansion.unused_axes:
        line = loaded.lines.get(("sweep", name))
        where = f"{loaded.file}:{line}" if line else loaded.file
        warnings.append(
            f"{where} at 'sweep.{name}': no step uses the sweep axis '{name}' (no ${name} in any chain or "
            "default it takes), so it makes no cases"
        )
    return warnings


def _shape_param(scenario: Scenario, file: str, lines: dict[KeyPath, int]) -> str | None:
    """The parameter the ``shapes`` block changes (None without one), checked before any case is built."""
    if scenario.shapes is None:
        return None
    param = scenario.shapes.get("param")
    where = ("shapes", "param")
    if param is None:
        raise ScenarioError(
            file,
            "missing required key 'param' (the parameter whose value changes)",
            lines.get(("shapes",)),
            "shapes",
        )
    if not isinstance(param, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", param):
        raise ScenarioError(
            file,
            f"shapes.param must be a plain name (letters, digits, _) that steps reference as $name (got {param!r})",
            lines.get(where),
            "shapes.param",
        )
    for block, names in (("params", scenario.params), ("sweep", scenario.sweep)):
        if param in names:
            raise ScenarioError(
                file,
                f"'{param}' is both the shape parameter and in {block}; the shapes give its values (remove it from {block})",
                lines.get((block, param), lines.get(where)),
                f"{block}.{param}",
            )
    return param


def iter_cases(
    scenario: Scenario, file: str, lines: dict[KeyPath, int], max_cases: int | None = None
) -> Iterator[Case]:
    """The cases of a scenario, one at a time, after plan_expansion has bounded them. A step that uses no
    sweep axis of its chain is validated once and shared by every case of the chain."""
    expansion = plan_expansion(scenario, file, lines, max_cases)
    single = _single(lines)
    built_steps = 0  # over all cases, every shape of a shape-changing case counted
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
            shapes: ShapePlan | None = None
            try:
                built = []
                if chain_name in expansion.shape_chains:
                    shapes = _shape_plan(scenario, raw_steps, params, file, lines, base)
                    built = list(shapes.variants[0])
                for index, raw in enumerate([] if shapes is not None else raw_steps):
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
            where = f" (in case '{case_id}')" if chain_axes else ""
            _check_ranks(steps, scenario.devices, file, lines, base, chain_axes, case_id)
            launches = max(shapes.launches) if shapes is not None else sum(s.launches() for s in steps)
            if launches > MAX_LAUNCHES_PER_ITER:
                raise ScenarioError(
                    file,
                    f"one iteration of the chain issues {launches:,} launches{where}, above the limit of "
                    f"{MAX_LAUNCHES_PER_ITER:,}",
                    lines.get(base),
                    format_path(base),
                )
            built_steps += _distinct_steps(shapes) if shapes is not None else len(steps)
            if built_steps > MAX_EXPANDED_STEPS:
                raise ScenarioError(
                    file,
                    f"the cases build more than {MAX_EXPANDED_STEPS:,} steps, each shape of a shape-changing "
                    f"case its own{where}; use fewer shapes or cases",
                    lines.get(("shapes", "values"), lines.get(base)),
                    "shapes.values" if shapes is not None else format_path(base),
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
                shapes=shapes,
                devices=scenario.devices,
            )


def _check_ranks(
    steps: tuple[Any, ...],
    devices: int,
    file: str,
    lines: dict[KeyPath, int],
    base: KeyPath,
    chain_axes: list[str],
    case_id: str,
) -> None:
    """Collective steps need 2 or more devices, and each step keeps its kind's rules on the ranks (a
    broadcast's root must be one of them)."""
    where = f" (in case '{case_id}')" if chain_axes else ""
    for index, step in enumerate(steps):
        path = base + (index,)
        if spec_of(step).collective and devices < 2:
            raise ScenarioError(
                file,
                f"the {step.kind} step pairs the ranks of several GPUs; set 'devices: 2' (or more) at the top "
                f"of the file{where}",
                lines.get(path),
                format_path(path),
            )
        problem = spec_of(step).ranks_problem(step, devices)
        if problem is not None:
            raise ScenarioError(
                file,
                f"{problem.message}{where}",
                lines.get(path + problem.key, lines.get(path)),
                format_path(path + problem.key),
            )


def _distinct_steps(shapes: ShapePlan) -> int:
    return len({id(step) for steps in shapes.variants for step in steps})


def _shape_plan(
    scenario: Scenario,
    raw_steps: list[Any],
    params: dict[str, Any],
    file: str,
    lines: dict[KeyPath, int],
    base: KeyPath,
) -> ShapePlan:
    """The chain's steps at each shape of the ``shapes`` block, with what can be refused before running:
    too few or repeated shapes, buffers beyond any GPU's memory over all shapes, and a change in the
    launches per iteration where the update strategy is measured (cudaGraphExecUpdate cannot add or
    remove nodes). What only the GPU knows (CuPy choosing other kernels at another size) is reported by
    the run: the update is refused, the strategy re-captures, and the result counts it."""
    assert scenario.shapes is not None
    where: KeyPath = ("shapes",)
    resolved = _substitute(scenario.shapes, params, file, lines, where)
    try:
        spec = Shapes.model_validate(resolved)
    except ValidationError as err:
        raise validation_error(err, file, lines, where, Shapes) from None
    values_at = ("shapes", "values")
    values = list(spec.values) if isinstance(spec.values, list) else axis_values("", spec.values)
    if isinstance(spec.values, SweepRange) and len(values) < spec.values.num:
        raise ScenarioError(
            file,
            f"the range gives {len(values)} distinct values for num: {spec.values.num} (rounded to whole "
            "numbers); each shape must be distinct: lower num or widen the range",
            _nearest_line(lines, values_at),
            "shapes.values",
        )
    if spec.order == "shuffle":
        random.Random(SHAPE_SEED).shuffle(values)
    uses_shape = [
        spec.param in _referenced([raw, _taken_defaults(raw, scenario.defaults)]) for raw in raw_steps
    ]
    shared: dict[int, Any] = {}
    variants = []
    for value in values:
        at = {**params, spec.param: value}
        steps = []
        for index, raw in enumerate(raw_steps):
            if not uses_shape[index]:
                if index not in shared:
                    shared[index] = _build_step(raw, scenario.defaults, params, file, lines, base + (index,))
                steps.append(shared[index])
                continue
            try:
                steps.append(_build_step(raw, scenario.defaults, at, file, lines, base + (index,)))
            except ScenarioError as err:
                raise ScenarioError(
                    err.file, f"{err.detail} (at {spec.param}={_fmt(value)})", err.line, err.key_path
                ) from None
        variants.append(tuple(steps))
    plan = ShapePlan(
        param=spec.param,
        values=tuple(values),
        per_shape=spec.per_shape,
        variants=tuple(variants),
        strategies=tuple(spec.strategies),
        order=spec.order,
        cache_limit=spec.cache_limit,
    )
    _check_update_topology(plan, file, lines, base)
    _check_shape_bytes(plan, file, lines)
    return plan


def _topology(step: Any) -> tuple[Any, ...]:
    """What decides a step's graph nodes, as far as the file says: its kind, stream and launches."""
    return (step.kind, step.stream, step.launches())


def _check_update_topology(plan: ShapePlan, file: str, lines: dict[KeyPath, int], base: KeyPath) -> None:
    if "update" not in plan.strategies:
        return
    first = plan.variants[0]
    for index, steps in enumerate(plan.variants[1:], start=1):
        for position, (a, b) in enumerate(zip(first, steps, strict=True)):
            if _topology(a) != _topology(b):
                path = base + (position,)
                raise ScenarioError(
                    file,
                    f"at {plan.label(0)} the step launches {a.launches():,} time(s), at {plan.label(index)} "
                    f"{b.launches():,}: cudaGraphExecUpdate cannot update a graph whose nodes change, so the "
                    "'update' strategy cannot follow this shape change; keep the launches fixed, or list "
                    "shapes.strategies without 'update'",
                    _nearest_line(lines, path),
                    format_path(path),
                )


def _check_shape_bytes(plan: ShapePlan, file: str, lines: dict[KeyPath, int]) -> None:
    seen: set[int] = set()
    total = 0
    largest = (0, 0)
    for index, steps in enumerate(plan.variants):
        own = 0
        for step in steps:
            if id(step) not in seen:
                seen.add(id(step))
                own += step_bytes(step)
        total += own
        largest = max(largest, (own, index))
    if total > MAX_CASE_BYTES:
        raise ScenarioError(
            file,
            f"the chain's buffers over its {plan.distinct} shapes take {total / 2**30:,.1f} GiB (the most, "
            f"{largest[0] / 2**30:,.1f} GiB, at {plan.label(largest[1])}), above the "
            f"{MAX_CASE_BYTES / 2**30:,.0f} GiB launchbench allows one case: every shape keeps its own "
            "buffers; use fewer or smaller shapes",
            _nearest_line(lines, ("shapes", "values")),
            "shapes.values",
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
