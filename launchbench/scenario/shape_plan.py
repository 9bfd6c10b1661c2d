"""A scenario's ``shapes:`` block → a case's ShapePlan: the chain's steps at each shape, with what can be
refused before running (the shape parameter's name, too few or repeated shapes, the buffers of all shapes
beyond any GPU's memory, launches that change where the update strategy is measured)."""

from __future__ import annotations

import random
import re
from typing import Any

from pydantic import ValidationError

from launchbench.errors import ScenarioError
from launchbench.kinds.fields import MAX_BYTES
from launchbench.kinds.registry import step_bytes
from launchbench.scenario.core import ShapePlan
from launchbench.scenario.messages import KeyPath, ScenarioSource, validation_error
from launchbench.scenario.model import NAME, Scenario, Shapes, SweepRange
from launchbench.scenario.sweep import axis_values
from launchbench.scenario.template import build_step, format_value, step_references, substitute

SHAPE_SEED = 1  # `order: shuffle` is the same permutation in every run
MAX_CASE_BYTES = MAX_BYTES  # a shape-changing case's buffers over all its shapes (more than a GPU holds)


def shape_param(scenario: Scenario, source: ScenarioSource) -> str | None:
    """The parameter the ``shapes`` block changes (None without one), checked before any case is built."""
    if scenario.shapes is None:
        return None
    param = scenario.shapes.get("param")
    where = ("shapes", "param")
    if param is None:
        raise source.error("missing required key 'param' (the parameter whose value changes)", ("shapes",))
    if not isinstance(param, str) or not re.match(f"^{NAME}$", param):
        raise source.error(
            f"shapes.param must be a plain name (letters, digits, _) that steps reference as $name (got {param!r})",
            where,
        )
    for block, names in (("params", scenario.params), ("sweep", scenario.sweep)):
        if param in names:
            raise source.error(
                f"'{param}' is both the shape parameter and in {block}; the shapes give its values (remove it from {block})",
                (block, param),
                source.lines.get((block, param), source.lines.get(where)),
            )
    return param


def shape_plan(
    scenario: Scenario, raw_steps: list[Any], params: dict[str, Any], source: ScenarioSource, base: KeyPath
) -> ShapePlan:
    """The chain's steps at each shape of the ``shapes`` block, with what can be refused before running:
    too few or repeated shapes, buffers beyond any GPU's memory over all shapes, and a change in the
    launches per iteration where the update strategy is measured (cudaGraphExecUpdate cannot add or
    remove nodes). What only the GPU knows (CuPy choosing other kernels at another size) is reported by
    the run: the update is refused, the strategy re-captures, and the result counts it."""
    assert scenario.shapes is not None
    where: KeyPath = ("shapes",)
    resolved = substitute(scenario.shapes, params, source, where)
    try:
        spec = Shapes.model_validate(resolved)
    except ValidationError as err:
        raise validation_error(err, source, where, Shapes) from None
    values = _shape_values(spec, source)
    plan = ShapePlan(
        param=spec.param,
        values=tuple(values),
        per_shape=spec.per_shape,
        variants=_variants(scenario, raw_steps, params, source, base, spec.param, values),
        strategies=tuple(spec.strategies),
        order=spec.order,
        cache_limit=spec.cache_limit,
    )
    _check_update_topology(plan, source, base)
    _check_shape_bytes(plan, source)
    return plan


def _shape_values(spec: Shapes, source: ScenarioSource) -> list[float | int]:
    """The shapes in the order they come: distinct, shuffled where the order says so."""
    values = list(spec.values) if isinstance(spec.values, list) else axis_values("", spec.values)
    if isinstance(spec.values, SweepRange) and len(values) < spec.values.num:
        raise source.error(
            f"the range gives {len(values)} distinct values for num: {spec.values.num} (rounded to whole "
            "numbers); each shape must be distinct: lower num or widen the range",
            ("shapes", "values"),
            source.nearest_line(("shapes", "values")),
        )
    if spec.order == "shuffle":
        random.Random(SHAPE_SEED).shuffle(values)
    return values


def _variants(
    scenario: Scenario,
    raw_steps: list[Any],
    params: dict[str, Any],
    source: ScenarioSource,
    base: KeyPath,
    param: str,
    values: list[float | int],
) -> tuple[tuple[Any, ...], ...]:
    """The chain's steps at each shape; a step that does not use the shape parameter is built once."""
    uses_shape = [param in step_references(raw, scenario.defaults) for raw in raw_steps]
    shared: dict[int, Any] = {}

    def at_shape(index: int, raw: Any, value: float | int) -> Any:
        if not uses_shape[index]:
            if index not in shared:
                shared[index] = build_step(raw, scenario.defaults, params, source, base + (index,))
            return shared[index]
        try:
            return build_step(raw, scenario.defaults, {**params, param: value}, source, base + (index,))
        except ScenarioError as err:
            raise ScenarioError(
                err.file, f"{err.detail} (at {param}={format_value(value)})", err.line, err.key_path
            ) from None

    return tuple(tuple(at_shape(i, raw, value) for i, raw in enumerate(raw_steps)) for value in values)


def distinct_steps(shapes: ShapePlan) -> int:
    """The steps a shape plan builds: a step shared by the shapes counted once."""
    return len({id(step) for steps in shapes.variants for step in steps})


def _topology(step: Any) -> tuple[Any, ...]:
    """What decides a step's graph nodes, as far as the file says: its kind, stream and launches."""
    return (step.kind, step.stream, step.launches())


def _check_update_topology(plan: ShapePlan, source: ScenarioSource, base: KeyPath) -> None:
    if "update" not in plan.strategies:
        return
    first = plan.variants[0]
    for index, steps in enumerate(plan.variants[1:], start=1):
        for position, (a, b) in enumerate(zip(first, steps, strict=True)):
            if _topology(a) == _topology(b):
                continue
            path = base + (position,)
            raise source.error(
                f"at {plan.label(0)} the step launches {a.launches():,} time(s), at {plan.label(index)} "
                f"{b.launches():,}: cudaGraphExecUpdate cannot update a graph whose nodes change, so the "
                "'update' strategy cannot follow this shape change; keep the launches fixed, or list "
                "shapes.strategies without 'update'",
                path,
                source.nearest_line(path),
            )


def _check_shape_bytes(plan: ShapePlan, source: ScenarioSource) -> None:
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
        raise source.error(
            f"the chain's buffers over its {plan.distinct} shapes take {total / 2**30:,.1f} GiB (the most, "
            f"{largest[0] / 2**30:,.1f} GiB, at {plan.label(largest[1])}), above the "
            f"{MAX_CASE_BYTES / 2**30:,.0f} GiB launchbench allows one case: every shape keeps its own "
            "buffers; use fewer or smaller shapes",
            ("shapes", "values"),
            source.nearest_line(("shapes", "values")),
        )
