"""``memset``: cudaMemsetAsync of a device buffer."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_BYTES, Int


class MemsetStep(StepBase):
    """cudaMemsetAsync of ``bytes`` bytes to ``value``."""

    kind: Literal["memset"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)
    value: Int = Field(0, ge=0, le=255)


def build(step: MemsetStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    dst = buffers.random_array(step.bytes, "uint8", context.rng)
    call = partial(dst.data.memset_async, step.value, step.bytes, stream)
    return base.repeated(call, step.repeat, dst, f"{prefix}.dst")


KIND = KindSpec(
    model=MemsetStep,
    build=build,
    nbytes=lambda step: step.bytes * 3,
    nodes_per_launch=1,
    takes_stream=True,
    summary="`cudaMemsetAsync`",
    examples=({"kind": "memset", "bytes": 64, "value": 1},),
)
