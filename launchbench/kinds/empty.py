"""``empty``: a kernel that does nothing, the pure cost of a launch."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import Field

from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_BLOCK_THREADS, MAX_GRID, Int

EMPTY_SOURCE = 'extern "C" __global__ void launchbench_empty() {}'
EMPTY_NAME = "launchbench_empty"


class EmptyStep(StepBase):
    """A kernel that does nothing: the pure cost of a launch."""

    kind: Literal["empty"]
    grid: Int = Field(1, ge=1, le=MAX_GRID[0])
    block: Int = Field(1, ge=1, le=MAX_BLOCK_THREADS)


def build(step: EmptyStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    kernel = context.kernel(EMPTY_SOURCE, EMPTY_NAME)
    call = partial(kernel, (step.grid,), (step.block,), (), stream=stream)
    return BuiltStep([call] * step.repeat)


KIND = KindSpec(
    model=EmptyStep,
    build=build,
    nbytes=lambda step: 0,
    nodes_per_launch=1,
    takes_stream=True,
    summary="a kernel that does nothing: the pure launch cost",
    examples=({"kind": "empty", "repeat": 3},),
)
