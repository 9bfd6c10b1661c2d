"""``reduction``: out = sum(x) through CuPy (CUB where CuPy uses it); its node count is CuPy's."""

from __future__ import annotations

from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_ELEMENTS, FloatDType, Int


class ReductionStep(StepBase):
    """out = sum(x) through CuPy (CUB where CuPy uses it)."""

    kind: Literal["reduction"]
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS)
    dtype: FloatDType = "float32"
    op: Literal["sum"] = "sum"


def build(step: ReductionStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    x = buffers.random_array(step.size, step.dtype, context.rng)
    out = cupy.zeros((), dtype=step.dtype)
    return base.repeated(partial(cupy.sum, x, out=out), step.repeat, out, f"{prefix}.out")


KIND = KindSpec(
    model=ReductionStep,
    build=build,
    nbytes=lambda step: step.size * np.dtype(step.dtype).itemsize + 64,
    nodes_per_launch=None,
    takes_stream=False,
    summary="`out = sum(x)` into a preallocated scalar (CUB through CuPy)",
    examples=({"kind": "reduction", "size": 100},),
)
