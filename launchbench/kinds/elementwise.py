"""``scale``, ``add``, ``fma``: elementwise kernels in place through CuPy."""

from __future__ import annotations

from functools import cache, partial
from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_ELEMENTS, Float, FloatDType, Int


class ElementwiseStep(StepBase):
    """scale: x = alpha*x;  add: y = x + y;  fma: y = alpha*x + y  (in place, through CuPy)."""

    kind: Literal["scale", "add", "fma"]
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS, description="elements per buffer")
    dtype: FloatDType = "float32"
    alpha: Float = 0.999


@cache
def fma_kernel() -> Any:
    import cupy

    return cupy.ElementwiseKernel("T x, T alpha", "T y", "y = alpha * x + y", "launchbench_fma")


def nbytes(step: ElementwiseStep) -> int:
    buffers = 1 if step.kind == "scale" else 2
    return step.size * np.dtype(step.dtype).itemsize * (buffers + 1)


def build(step: ElementwiseStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    x = buffers.random_array(step.size, step.dtype, context.rng)
    alpha = np.dtype(step.dtype).type(step.alpha)
    if step.kind == "scale":
        return base.repeated(partial(cupy.multiply, x, alpha, out=x), step.repeat, x, f"{prefix}.x")
    y = buffers.random_array(step.size, step.dtype, context.rng)
    call = partial(cupy.add, x, y, out=y) if step.kind == "add" else partial(fma_kernel(), x, alpha, y)
    return base.repeated(call, step.repeat, y, f"{prefix}.y")


KIND = KindSpec(
    model=ElementwiseStep,
    build=build,
    nbytes=nbytes,
    nodes_per_launch=1,
    takes_stream=False,
    summary="`scale`: `x = alpha·x` in place (`cupy.multiply(..., out=)`); `add`: `y = x + y` in place; "
    "`fma`: `y = alpha·x + y` (an `ElementwiseKernel`)",
    examples=(
        {"kind": "scale", "size": 1000, "dtype": "float64"},
        {"kind": "add", "size": 10},
        {"kind": "fma", "size": 10, "repeat": 2},
    ),
)
