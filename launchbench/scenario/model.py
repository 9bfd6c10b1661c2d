"""Pydantic models of a scenario file; the steps a chain can hold are the step kinds' models
(kinds/, one module per kind), joined here into the Step union.

A scenario names a set of chains (each a list of steps) and the parameters they use. Step fields may
hold ``$name`` references to parameters; a ``sweep`` gives some parameters several values, and every
combination of values is one case (see expand.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from launchbench.kinds.base import KindSpec, StepBase
from launchbench.kinds.fields import NUMBER_ONLY, Bool, Float, Int, Number, ParamValue, Strict
from launchbench.kinds.registry import KINDS
from launchbench.scenario.core import MeasureSettings
from launchbench.scenario.floor import Floor

MAX_SWEEP_MAGNITUDE = 1e18  # range ends beyond this are typos, and their arithmetic overflows
MAX_DEVICES = 16  # more GPUs than one host has


def step_union(specs: Sequence[KindSpec]) -> Any:
    """The Step type of a scenario: the kinds' models, told apart by ``kind``."""
    return Annotated[Union[tuple(spec.model for spec in specs)], Field(discriminator="kind")]  # noqa: UP007


def step_fields(specs: Sequence[KindSpec]) -> dict[str, list[str]]:
    """The YAML keys each kind takes, by kind."""
    return {
        kind: [info.alias or name for name, info in spec.model.model_fields.items()]
        for spec in specs
        for kind in spec.kinds
    }


if TYPE_CHECKING:
    Step = StepBase
else:
    Step = step_union(KINDS)


class SweepRange(Strict):
    """A numeric axis given as a range: ``num`` values from ``start`` to ``stop``, linear or log spaced."""

    start: Float = Field(..., ge=-MAX_SWEEP_MAGNITUDE, le=MAX_SWEEP_MAGNITUDE)
    stop: Float = Field(..., ge=-MAX_SWEEP_MAGNITUDE, le=MAX_SWEEP_MAGNITUDE)
    num: Int = Field(..., ge=1, le=10_000)
    scale: Literal["linear", "log"] = "log"
    integer: Bool = True

    @model_validator(mode="after")
    def _positive_for_log(self) -> SweepRange:
        if self.scale == "log" and (self.start <= 0 or self.stop <= 0):
            raise ValueError("a log-scaled range needs start and stop above 0")
        return self


ShapeStrategy = Literal["recapture", "cache", "update"]
SHAPE_STRATEGIES: tuple[ShapeStrategy, ...] = ("recapture", "cache", "update")
MAX_SHAPES = 10_000  # distinct shapes of one chain (each builds its own buffers)
MAX_PER_SHAPE = 1_000_000


class Shapes(Strict):
    """Sizes that change between iterations: the parameter ``param`` takes each of ``values`` in turn
    (in the order given, or a fixed shuffle of it), for ``per_shape`` iterations each, and the sequence
    repeats, so every shape recurs. Chains whose steps use ``$param`` are measured eagerly and with each
    graph strategy: re-capture on every change, a cache of one graph per shape (at most ``cache_limit``
    graphs, least recently used evicted), one executable graph updated in place (cudaGraphExecUpdate).
    Fields may hold ``$name`` references to parameters and sweep axes, as steps do."""

    param: Identifier
    values: list[Number] | SweepRange
    per_shape: Int = Field(
        ..., ge=1, le=MAX_PER_SHAPE, description="iterations at one shape before it changes"
    )
    order: Literal["cycle", "shuffle"] = "cycle"
    # the bounds before NUMBER_ONLY, so the JSON Schema shows them as minimum and maximum
    cache_limit: Annotated[int, Field(ge=1, le=MAX_SHAPES), NUMBER_ONLY] | None = Field(
        None, description="graphs the cache strategy keeps (default: one per shape)"
    )
    strategies: Annotated[list[ShapeStrategy], Field(min_length=1)] = Field(
        default_factory=lambda: list(SHAPE_STRATEGIES)
    )

    @field_validator("values")
    @classmethod
    def _distinct_values(cls, values: list[float | int] | SweepRange) -> list[float | int] | SweepRange:
        count = len(values) if isinstance(values, list) else values.num
        if count < 2:
            raise ValueError(f"a shape change needs at least two shapes (got {count})")
        if count > MAX_SHAPES:
            raise ValueError(f"{count:,} shapes, above the limit of {MAX_SHAPES:,}")
        if isinstance(values, list):
            twice = [v for i, v in enumerate(values) if v in values[:i]]
            if twice:
                raise ValueError(
                    f"{twice[0]:g} is listed twice; each shape must be distinct (per_shape repeats a shape)"
                )
        return values

    @field_validator("strategies")
    @classmethod
    def _distinct_strategies(cls, strategies: list[str]) -> list[str]:
        twice = sorted({s for s in strategies if strategies.count(s) > 1})
        if twice:
            raise ValueError(f"strategy '{twice[0]}' is listed twice")
        return strategies


class Expectation(Strict):
    """A rule checked on a single run: e.g. graph wall time per launch below 1 µs for a case."""

    case: str = Field("*", description="case id or fnmatch pattern")
    mode: Literal["eager", "graph", "recapture", "cache", "update", "torch_graph"] = "graph"
    metric: str
    min: Float | None = None
    max: Float | None = None

    @field_validator("max")
    @classmethod
    def _max_above_min(cls, high: float | None, info: ValidationInfo) -> float | None:
        low = info.data.get("min")
        if high is not None and low is not None and high < low:
            raise ValueError(f"max ({high:g}) is below min ({low:g}): no value can pass")
        return high

    @model_validator(mode="after")
    def _bound(self) -> Expectation:
        if self.max is None and self.min is None:
            raise ValueError("an expectation needs max or min")
        return self


def _chain_name(name: str) -> str:
    if "/" in name or not name.strip() or not name.isprintable():
        raise ValueError(f"chain name {name!r} must be non-empty, printable and hold no '/'")
    return name


ChainName = Annotated[str, AfterValidator(_chain_name)]
ChainSteps = Annotated[list[dict[str, Any]], Field(min_length=1)]
NAME = r"[A-Za-z_][A-Za-z0-9_]*"  # a parameter's name: what `$name` can reference
Identifier = Annotated[str, Field(pattern=f"^{NAME}$")]
SweepValues = Annotated[list[Number], Field(min_length=1)]


class Scenario(Strict):
    EXTRA_KEYS: ClassVar[tuple[str, ...]] = ("chain",)  # read as chains: {chain: ...}

    name: str = Field(..., min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = Field(..., min_length=1)
    params: dict[Identifier, ParamValue] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(
        default_factory=dict, description="step fields applied to every step that takes them"
    )
    sweep: dict[Identifier, SweepValues | SweepRange] = Field(default_factory=dict)
    chains: dict[ChainName, ChainSteps] = Field(..., min_length=1)
    measure: MeasureSettings = Field(default_factory=MeasureSettings)
    expect: list[Expectation] = Field(default_factory=list)
    max_cases: Int = Field(1000, ge=1)
    shapes: dict[str, Any] | None = Field(
        None, description="sizes that change between iterations (Shapes; checked per case, as steps are)"
    )
    devices: Int = Field(
        1,
        ge=1,
        le=MAX_DEVICES,
        description="GPUs every chain runs on, one rank (worker process) each; collective steps pair them",
    )
    floor: Floor | None = Field(
        None, description="the launch-path layers `launchbench floor` measures (`run`: after the chains)"
    )

    @model_validator(mode="before")
    @classmethod
    def _single_chain(cls, data: Any) -> Any:
        if isinstance(data, dict) and "chain" in data:
            if "chains" in data:
                raise ValueError("give either 'chain' or 'chains', not both")
            data = dict(data)
            data["chains"] = {"chain": data.pop("chain")}
        return data


STEP_FIELDS: dict[str, list[str]] = step_fields(KINDS)
STEP_KINDS: tuple[str, ...] = tuple(STEP_FIELDS)
