"""``axpy``: y ← alpha·x + y as CuPy code writes it, ``y += alpha * x``: a multiply into a temporary,
then an add. ``temporary`` says where the temporary lives:

- ``preallocated``: one buffer allocated with the step, written with ``out=`` (launchbench's rule for
  graphs: no allocation inside the chain);
- ``pool``: a new array per launch from CuPy's caching memory pool (what plain CuPy code does; inside
  a capture the graph's own pool serves it, warmed before capture, so no allocation is captured);
- ``async``: a new array per launch from ``cupy.cuda.MemoryAsyncPool`` (CUDA's stream-ordered
  allocator: cudaMallocAsync/cudaFreeAsync on the stream). Captured, the allocation and the free become
  memory alloc/free nodes of the graph, which owns that memory from then on.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_ELEMENTS, Float, FloatDType, Int

Temporary = Literal["preallocated", "pool", "async"]


class AxpyStep(StepBase):
    """y ← alpha·x + y through a temporary (``y += alpha * x``), the temporary preallocated, from CuPy's
    pool, or from the stream-ordered MemoryAsyncPool (memory nodes when captured)."""

    kind: Literal["axpy"]
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS, description="elements per buffer")
    dtype: FloatDType = "float32"
    alpha: Float = 0.5
    temporary: Temporary = Field(
        "preallocated",
        description="where alpha·x lives: preallocated, pool (CuPy's) or async (MemoryAsyncPool)",
    )

    def launches(self) -> int:
        return 2 * self.repeat  # the multiply and the add (an allocation is not a launch)


class Axpy:
    def __init__(self, step: AxpyStep, context: BuildContext, stream: Any):
        import cupy

        self.stream = stream
        self.x = buffers.random_array(step.size, step.dtype, context.rng)
        self.y = buffers.random_array(step.size, step.dtype, context.rng)
        self.alpha = np.dtype(step.dtype).type(step.alpha)
        self.temporary = step.temporary
        self.scratch = cupy.empty_like(self.x) if step.temporary == "preallocated" else None
        self.async_pool = cupy.cuda.MemoryAsyncPool() if step.temporary == "async" else None

    def __call__(self) -> None:
        import cupy

        with self.stream:
            if self.scratch is not None:
                cupy.multiply(self.x, self.alpha, out=self.scratch)
                cupy.add(self.y, self.scratch, out=self.y)
            elif self.async_pool is not None:
                with cupy.cuda.using_allocator(self.async_pool.malloc):
                    cupy.add(self.y, cupy.multiply(self.x, self.alpha), out=self.y)  # freed on the stream
            else:
                cupy.add(self.y, cupy.multiply(self.x, self.alpha), out=self.y)


def nbytes(step: AxpyStep) -> int:
    return step.size * np.dtype(step.dtype).itemsize * 4  # x, y, y's initial copy, the temporary


def build(step: AxpyStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    axpy = Axpy(step, context, stream)
    built = BuiltStep([axpy] * step.repeat, keep=[axpy])
    base.with_initial(axpy.y, built, f"{prefix}.y")
    x, y0 = cupy.asnumpy(axpy.x), cupy.asnumpy(axpy.y)

    def reference() -> dict[str, np.ndarray]:
        y = y0.copy()
        for _ in range(step.repeat):
            np.add(y, np.multiply(x, axpy.alpha), out=y)
        return {f"{prefix}.y": y}

    built.reference = reference
    return built


KIND = KindSpec(
    model=AxpyStep,
    build=build,
    nbytes=nbytes,
    nodes_per_launch=1,
    takes_stream=True,
    summary="`y += alpha * x` through a temporary; `async` takes it from MemoryAsyncPool: memory "
    "alloc/free nodes when captured",
    examples=({"kind": "axpy", "size": 100, "temporary": "async", "repeat": 3},),
    graph_nodes=lambda step: (4 if step.temporary == "async" else 2) * step.repeat,  # + alloc, free
)
