"""What measuring needs from a scenario: the measurement settings and the Case (one chain with every
parameter fixed). The YAML schema (model.py) builds on these; measure/ imports only this module."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from launchbench.kinds.fields import NUMBER_ONLY, Float, Int, Strict
from launchbench.scenario.messages import error_text


class MeasureSettings(Strict):
    """How long and how precisely to measure each case (all times in seconds)."""

    target_noise: Float = Field(
        0.01, gt=0, le=1, description="stop when the median's 95% CI half-width is within this fraction"
    )
    latency_target_noise: Float = Field(
        0.03,
        gt=0,
        le=1,
        description="the same target for launch-to-completion latency, whose samples are single iterations",
    )
    min_samples: Int = Field(10, ge=3, le=1_000_000)
    max_samples: Int = Field(2000, ge=3, le=10_000_000)
    max_time: Float = Field(4.0, gt=0, le=86_400, description="time budget per case, both modes together")
    warmup_time: Float = Field(
        0.1,
        ge=0,
        le=600,
        description="most warm-up per mode before each pass samples; it ends once the first launch and 3 whole samples after it are done",
    )
    sample_time: Float = Field(0.005, gt=0, le=60, description="minimum duration of one throughput sample")
    passes: Int = Field(
        5,
        ge=1,
        le=100,
        description="passes over all cases, each in a fresh worker process; each case's budget is split among them so drift shows in its CI",
    )
    # the bounds before NUMBER_ONLY, so the JSON Schema shows them as minimum and maximum
    added_passes: Annotated[int, Field(ge=0, le=100), NUMBER_ONLY] | None = Field(
        None,
        description="most passes added beyond `passes` to a case whose host levels ask for them (docs/statistics.md, Host levels); default: as many as `passes`",
    )
    max_in_flight: Int = Field(512, ge=2, le=100_000, description="most launches queued on the GPU at once")

    @field_validator("max_samples")
    @classmethod
    def _sample_bounds(cls, max_samples: int, info: ValidationInfo) -> int:
        min_samples = info.data.get("min_samples")
        if min_samples is not None and min_samples > max_samples:
            raise ValueError(f"max_samples ({max_samples}) is below min_samples ({min_samples})")
        return max_samples

    def one_pass(self) -> MeasureSettings:
        """These settings as one of ``passes`` passes measures: the time budget split among the passes,
        the sample counts too (at least 3 each), one pass."""
        return self.model_copy(
            update={
                "max_time": self.max_time / self.passes,
                "min_samples": max(3, math.ceil(self.min_samples / self.passes)),
                "max_samples": max(3, math.ceil(self.max_samples / self.passes)),
                "passes": 1,
            }
        )


OVERRIDE_OPTIONS = {
    "target_noise": "--target-noise",
    "max_time": "--max-time",
    "min_samples": "--min-samples",
    "passes": "--passes",
}


def measure_overrides_error(err: ValidationError) -> str:
    """A ValidationError of MeasureSettings built from command-line values, as one line naming the option."""
    first = err.errors(include_url=False)[0]
    name = str(first["loc"][0]) if first["loc"] else ""
    message = error_text(first)
    option = OVERRIDE_OPTIONS.get(name)
    if option is None:  # a rule across fields: a command-line value against the file's
        return f"measure.{name}: {message}"
    return (
        f"{option} {first.get('input')!r}: {message}"
        if isinstance(first.get("input"), (int, float))
        else f"{option}: {message}"
    )


def with_overrides(settings: MeasureSettings, overrides: dict[str, Any]) -> MeasureSettings:
    """``settings`` with command-line values applied, held to the same rules as the file's values
    (finite, in range, min_samples not above max_samples). Raises pydantic's ValidationError."""
    if not overrides:
        return settings
    return MeasureSettings.model_validate({**settings.model_dump(), **overrides})


@dataclass(frozen=True)
class ShapePlan:
    """How a case's sizes change between iterations (the scenario's ``shapes:``): the chain's steps at each
    shape, in the order the shapes come; each shape runs ``per_shape`` iterations, then the next, and the
    sequence repeats. A step that does not use the shape parameter is the same object at every shape (built
    once, its buffers shared)."""

    param: str
    values: tuple[float | int, ...]  # in the order they come
    per_shape: int
    variants: tuple[tuple[Any, ...], ...]  # the chain's steps at each value
    strategies: tuple[str, ...]  # graph strategies measured beside eager: recapture, cache, update
    order: str = "cycle"
    cache_limit: int | None = None

    @property
    def distinct(self) -> int:
        return len(self.values)

    @property
    def launches(self) -> tuple[int, ...]:
        """Launches per iteration at each shape."""
        return tuple(sum(step.launches() for step in steps) for steps in self.variants)

    def label(self, index: int) -> str:
        value = self.values[index]
        shown = int(value) if isinstance(value, float) and value.is_integer() else value
        return f"{self.param}={shown}"


@dataclass(frozen=True)
class Case:
    """One chain with every parameter fixed: the unit that is measured."""

    scenario: str
    chain: str
    case_id: str
    params: dict[str, Any]
    steps: tuple[Any, ...]
    measure: MeasureSettings
    source: str = ""
    axes: tuple[str, ...] = field(default=())
    shapes: ShapePlan | None = None  # sizes that change between iterations; ``steps`` are the first shape's
    devices: int = 1  # GPUs the chain runs on, one rank each

    @property
    def launches_per_iter(self) -> int:
        """Launches one iteration issues (for a shape-changing case, the mean over its shapes, which every
        cycle of the sequence visits for the same number of iterations)."""
        if self.shapes is not None:
            launches = self.shapes.launches
            return max(1, round(sum(launches) / len(launches)))
        return sum(step.launches() for step in self.steps)

    @property
    def kinds(self) -> str:
        """The step kinds of the chain, in order, without repeats (e.g. 'scale' or 'scale+reduction')."""
        seen: list[str] = []
        for step in self.steps:
            if step.kind not in seen:
                seen.append(step.kind)
        return "+".join(seen)
