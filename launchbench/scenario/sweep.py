"""A sweep's axes and the bounds on what it makes: the cases (a file's ``max_cases``, or ``--max-cases``),
the steps over all cases (MAX_EXPANDED_STEPS) and the launches of one iteration (MAX_LAUNCHES_PER_ITER).

The bounds are checked twice with the same messages: on the text before the document is built
(prescan.py's counts, so that refusing a large file costs less than loading it) and exactly once the
scenario is validated (``check_sweep_size``, and per case as the cases are built).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from launchbench.errors import ScenarioError
from launchbench.scenario import prescan
from launchbench.scenario.load import ScenarioFile, load_scenario_file
from launchbench.scenario.messages import KeyPath, ScenarioSource
from launchbench.scenario.model import Scenario, SweepRange

MAX_EXPANDED_STEPS = (
    200_000  # steps over all cases of a file (cases × steps per chain): what expansion builds
)
MAX_LAUNCHES_PER_ITER = 1_000_000  # launches one iteration of one case issues (seconds of launching, eagerly)


def axis_values(axis: str, spec: list[float | int] | SweepRange) -> list[float | int]:
    """An axis's distinct values, in order: the list given, or the range's values (rounded where integer)."""
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


def load_bounded(path: str | Path, max_cases: int | None = None) -> ScenarioFile:
    """Load a scenario file, refusing a sweep that is sure to exceed the limits before the document is
    built (prescan.py), so that refusing a large file costs less than loading it."""
    return load_scenario_file(path, precheck=lambda text, file: _precheck(text, file, max_cases))


def _range_size(spec: dict[str, str]) -> int | None:
    """The distinct values of a sweep range given as the text of its scalars; None where it is not one."""

    def scalar(text: str) -> Any:
        if text in ("true", "false"):
            return text == "true"
        number = prescan.number(text)
        return text if number is None else number

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


def check_sweep_size(
    scenario: Scenario, source: ScenarioSource, per_chain: dict[str, int], limit: int
) -> tuple[int, int]:
    """The cases and the steps the sweep makes (``per_chain``: the cases of each chain), refused above
    ``limit`` cases or MAX_EXPANDED_STEPS steps."""
    total = sum(per_chain.values())
    if total > limit:
        raise source.error(_too_many_cases(total, limit), ("sweep",))
    steps = sum(per_chain[name] * len(raw_steps) for name, raw_steps in scenario.chains.items())
    if steps > MAX_EXPANDED_STEPS:
        biggest = max(scenario.chains, key=lambda name: per_chain[name] * len(scenario.chains[name]))
        message = _too_many_steps(steps, total, biggest, per_chain[biggest], len(scenario.chains[biggest]))
        raise source.error(message, source.chain_path(biggest))
    return total, steps


def check_launches(launches: int, where: str, source: ScenarioSource, base: KeyPath) -> None:
    """One iteration of the chain at ``base`` issues at most MAX_LAUNCHES_PER_ITER launches."""
    if launches > MAX_LAUNCHES_PER_ITER:
        raise source.error(
            f"one iteration of the chain issues {launches:,} launches{where}, above the limit of "
            f"{MAX_LAUNCHES_PER_ITER:,}",
            base,
        )


class StepCount:
    """The steps the cases have built so far, every shape of a shape-changing case counted: refused
    beyond MAX_EXPANDED_STEPS."""

    def __init__(self, source: ScenarioSource):
        self.source = source
        self.built = 0

    def add(self, steps: int, where: str, at: KeyPath, base: KeyPath) -> None:
        """Count the ``steps`` of a case of the chain at ``base``; a refusal names ``at``."""
        self.built += steps
        if self.built > MAX_EXPANDED_STEPS:
            lines = self.source.lines
            raise self.source.error(
                f"the cases build more than {MAX_EXPANDED_STEPS:,} steps, each shape of a shape-changing "
                f"case its own{where}; use fewer shapes or cases",
                at,
                lines.get(("shapes", "values"), lines.get(base)),
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
