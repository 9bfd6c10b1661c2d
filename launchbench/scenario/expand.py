"""Sweep axes → cases: every combination of axis values, per chain, with a stable case id.

A chain only varies along the axes it references (``$name`` in its steps or in the defaults it takes),
so a sweep over ``size`` does not multiply a chain of empty kernels. ``plan_expansion`` checks the
references and bounds the sweep before anything is built (sweep.py); ``iter_cases`` builds the cases
one at a time (template.py builds each step, shape_plan.py the steps at each shape).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from launchbench.errors import ScenarioError
from launchbench.kinds.registry import spec_of
from launchbench.scenario.core import Case, ShapePlan
from launchbench.scenario.load import ScenarioFile
from launchbench.scenario.messages import KeyPath, ScenarioSource, format_path
from launchbench.scenario.model import Scenario
from launchbench.scenario.shape_plan import distinct_steps, shape_param, shape_plan
from launchbench.scenario.sweep import StepCount, axis_values, check_launches, check_sweep_size, load_bounded
from launchbench.scenario.template import (
    build_step,
    check_references,
    format_value,
    referenced,
    step_references,
)


def expand_scenario(path: str | Path, max_cases: int | None = None) -> list[Case]:
    """Load a scenario file and expand it into validated cases."""
    return expand_loaded(load_bounded(path, max_cases), max_cases)


def expand_loaded(loaded: ScenarioFile, max_cases: int | None = None) -> list[Case]:
    return list(iter_cases(loaded, max_cases))


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

    def combos(self, chain_name: str) -> Iterator[tuple[Any, ...]]:
        """The values of the chain's axes, one combination per case."""
        return itertools.product(*(self.axes[a] for a in self.chain_axes[chain_name]))

    def case_ids(self, scenario: Scenario) -> Iterator[str]:
        for chain_name in scenario.chains:
            for combo in self.combos(chain_name):
                yield _case_id(chain_name, self.chain_axes[chain_name], combo)


def plan_expansion(loaded: ScenarioFile, max_cases: int | None = None) -> Expansion:
    """Check references and sizes, and count the cases and steps the sweep makes, building none of them:
    a sweep beyond ``max_cases`` cases (the file's max_cases by default) or MAX_EXPANDED_STEPS steps is
    refused here, in time that grows with the file, not with the sweep."""
    scenario, source = loaded.scenario, loaded.source
    if scenario.devices > 1 and scenario.shapes is not None:
        raise source.error(
            "a scenario on several GPUs (devices) keeps its sizes: drop 'shapes' or set 'devices: 1'",
            ("devices",),
        )
    axes = {name: axis_values(name, spec) for name, spec in scenario.sweep.items()}
    param = shape_param(scenario, source)
    chain_axes, shape_chains = _chain_axes(scenario, source, axes, param)
    if param is not None and not shape_chains:
        raise source.error(
            f"no chain uses ${param}, so no size changes; reference it in a step (e.g. size: ${param})",
            ("shapes", "param"),
        )
    per_chain = {name: math.prod(len(axes[a]) for a in names) for name, names in chain_axes.items()}
    total, steps = check_sweep_size(
        scenario, source, per_chain, max_cases if max_cases is not None else scenario.max_cases
    )
    for name in axes:
        if name in scenario.params and not isinstance(scenario.params[name], (int, float)):
            raise source.error(f"sweep axis '{name}' overrides a non-numeric parameter", ("sweep", name))
    return Expansion(total, steps, chain_axes, axes, frozenset(shape_chains))


def _chain_axes(
    scenario: Scenario, source: ScenarioSource, axes: dict[str, list[float | int]], param: str | None
) -> tuple[dict[str, list[str]], set[str]]:
    """The axes each chain varies along, and the chains that use the shape parameter, once every
    reference (in the shapes, the defaults and the chains) is known to name a parameter or an axis."""
    known: dict[str, Any] = {**scenario.params, **axes}
    shape_axes: set[str] = set()
    in_steps = known
    if param is not None:
        check_references(scenario.shapes, known, source, ("shapes",))
        shape_axes = referenced(scenario.shapes) & set(axes)
        in_steps = {**known, param: 1}
    check_references(scenario.defaults, in_steps, source, ("defaults",))
    chain_axes: dict[str, list[str]] = {}
    shape_chains: set[str] = set()
    for chain_name, raw_steps in scenario.chains.items():
        check_references(raw_steps, in_steps, source, source.chain_path(chain_name))
        names = set().union(*(step_references(raw, scenario.defaults) for raw in raw_steps))
        used = names & set(axes)
        if param is not None and param in names:
            shape_chains.add(chain_name)
            used |= shape_axes
        chain_axes[chain_name] = [a for a in axes if a in used]
    return chain_axes, shape_chains


def sweep_warnings(loaded: ScenarioFile, max_cases: int | None = None) -> list[str]:
    """One line per sweep axis that no step uses (it makes no case: a misspelt ``$name``?), with the
    file, line and key, for validate and run to print as warnings."""
    expansion = plan_expansion(loaded, max_cases)
    warnings = []
    for name in expansion.unused_axes:
        line = loaded.lines.get(("sweep", name))
        where = f"{loaded.file}:{line}" if line else loaded.file
        warnings.append(
            f"{where} at 'sweep.{name}': no step uses the sweep axis '{name}' (no ${name} in any chain or "
            "default it takes), so it makes no cases"
        )
    return warnings


def iter_cases(loaded: ScenarioFile, max_cases: int | None = None) -> Iterator[Case]:
    """The cases of a scenario, one at a time, after plan_expansion has bounded them. A step that uses no
    sweep axis of its chain is validated once and shared by every case of the chain."""
    expansion = plan_expansion(loaded, max_cases)
    count = StepCount(loaded.source)  # over all cases, every shape of a shape-changing case counted
    for chain_name in loaded.scenario.chains:
        chain = _ChainCases(loaded, chain_name, expansion)
        for combo in expansion.combos(chain_name):
            case = chain.case(combo)
            shapes = case.shapes
            launches = max(shapes.launches) if shapes is not None else sum(s.launches() for s in case.steps)
            check_launches(launches, chain.where(case), loaded.source, chain.base)
            at = ("shapes", "values") if shapes is not None else chain.base
            built = distinct_steps(shapes) if shapes is not None else len(case.steps)
            count.add(built, chain.where(case), at, chain.base)
            yield case


class _ChainCases:
    """The cases of one chain. A step that uses no sweep axis of the chain is built once, for every case."""

    def __init__(self, loaded: ScenarioFile, chain_name: str, expansion: Expansion):
        self.loaded, self.scenario, self.source = loaded, loaded.scenario, loaded.source
        self.name = chain_name
        self.axes = expansion.chain_axes[chain_name]
        self.base = loaded.source.chain_path(chain_name)
        self.raw_steps = loaded.scenario.chains[chain_name]
        self.shape_changing = chain_name in expansion.shape_chains
        defaults = loaded.scenario.defaults
        self.varying = [bool(step_references(raw, defaults) & set(self.axes)) for raw in self.raw_steps]
        self.fixed: dict[int, Any] = {}

    def where(self, case: Case) -> str:
        """What a message about one of the chain's cases adds: the case, where the chain has several."""
        return f" (in case '{case.case_id}')" if self.axes else ""

    def case(self, combo: tuple[Any, ...]) -> Case:
        params = {**self.scenario.params, **dict(zip(self.axes, combo))}
        case_id = _case_id(self.name, self.axes, combo)
        try:
            steps, shapes = self._steps(params)
        except ScenarioError as err:
            if not self.axes:
                raise
            raise ScenarioError(
                err.file, f"{err.detail} (in case '{case_id}')", err.line, err.key_path
            ) from None
        scenario, loaded = self.scenario, self.loaded
        _check_ranks(steps, scenario.devices, loaded.file, loaded.lines, self.base, self.axes, case_id)
        return Case(
            scenario=scenario.name,
            chain=self.name,
            case_id=case_id,
            params=dict(zip(self.axes, combo)),
            steps=steps,
            measure=scenario.measure,
            source=loaded.file,
            axes=tuple(self.axes),
            shapes=shapes,
            devices=scenario.devices,
        )

    def _steps(self, params: dict[str, Any]) -> tuple[tuple[Any, ...], ShapePlan | None]:
        """The case's steps (a shape-changing case's at its first shape) and its shape plan."""
        if self.shape_changing:
            shapes = shape_plan(self.scenario, self.raw_steps, params, self.source, self.base)
            return tuple(shapes.variants[0]), shapes
        return tuple(self._step(index, raw, params) for index, raw in enumerate(self.raw_steps)), None

    def _step(self, index: int, raw: Any, params: dict[str, Any]) -> Any:
        if not self.varying[index] and index in self.fixed:
            return self.fixed[index]
        step = build_step(raw, self.scenario.defaults, params, self.source, self.base + (index,))
        if not self.varying[index]:
            self.fixed[index] = step
        return step


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


def _case_id(chain_name: str, chain_axes: list[str], combo: tuple[Any, ...]) -> str:
    suffix = ",".join(f"{a}={format_value(v)}" for a, v in zip(chain_axes, combo))
    return f"{chain_name}/{suffix}" if suffix else chain_name
