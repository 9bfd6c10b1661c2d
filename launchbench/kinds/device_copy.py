"""``copy``: a device-to-device copy (cudaMemcpyAsync)."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_BYTES, Int


class CopyStep(StepBase):
    """Device-to-device copy of ``bytes`` bytes (cudaMemcpyAsync)."""

    kind: Literal["copy"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)


def build(step: CopyStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    src = buffers.random_array(step.bytes, "uint8", context.rng)
    dst = cupy.full(step.bytes, base.POISON_BYTE, dtype=cupy.uint8)
    call = partial(dst.data.copy_from_device_async, src.data, step.bytes, stream)
    return base.repeated(call, step.repeat, dst, f"{prefix}.dst")


KIND = KindSpec(
    model=CopyStep,
    build=build,
    nbytes=lambda step: step.bytes * 3,
    nodes_per_launch=1,
    takes_stream=True,
    summary="device-to-device `cudaMemcpyAsync`",
    examples=({"kind": "copy", "bytes": 64},),
)
