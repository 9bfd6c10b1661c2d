"""``raw``: the user's own CUDA C kernel, compiled with NVRTC through cupy.RawKernel."""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, ValidationInfo, WithJsonSchema, field_validator

from launchbench.errors import LaunchbenchError
from launchbench.kinds import base
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.buffers import random_array
from launchbench.kinds.fields import (
    MAX_BLOCK,
    MAX_BLOCK_THREADS,
    MAX_ELEMENTS,
    MAX_GRID,
    Int,
    Number,
    ScalarDType,
    Strict,
)


class KernelCompileError(LaunchbenchError):
    """A raw kernel that NVRTC cannot compile; the message holds the compiler's log."""


class RawBuffer(Strict):
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS)
    dtype: ScalarDType = "float32"
    init: Literal["random", "zeros", "ones", "arange"] = "random"


class BufferArg(Strict):
    buffer: str


class ScalarArg(Strict):
    scalar: Number
    dtype: ScalarDType = "float32"


def _dim3(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return value
    return (value,)


# the schema of what a scenario may write: one number, or a list of 1 to 3 (the before-validator's input)
Dim3 = Annotated[
    tuple[Int, ...],
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1},
                {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1, "maxItems": 3},
            ]
        },
        mode="validation",
    ),
]


class RawStep(StepBase):
    """The user's own CUDA C kernel, compiled with NVRTC through cupy.RawKernel."""

    kind: Literal["raw"]
    source: str = Field(..., min_length=1)
    function: str = Field(..., min_length=1, description='the extern "C" kernel name')
    grid: Dim3 = Field(..., description="blocks: one number or 1 to 3 (x, y, z)")
    block: Dim3 = Field(..., description="threads per block: one number or 1 to 3 (x, y, z)")
    shared_mem: Int = Field(0, ge=0, le=228 * 1024)
    options: tuple[str, ...] = ()
    buffers: dict[str, RawBuffer] = Field(default_factory=dict)
    args: tuple[BufferArg | ScalarArg, ...] = ()

    _dims = field_validator("grid", "block", mode="before")(_dim3)

    @field_validator("grid", "block")
    @classmethod
    def _check_dims(cls, dims: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
            raise ValueError("must be 1 to 3 positive integers")
        limits = MAX_GRID if info.field_name == "grid" else MAX_BLOCK
        for axis, (d, limit) in enumerate(zip(dims, limits)):
            if d > limit:
                raise ValueError(f"dimension {'xyz'[axis]} is {d}; CUDA allows at most {limit}")
        if info.field_name == "block":
            threads = math.prod(dims)
            if threads > MAX_BLOCK_THREADS:
                raise ValueError(f"block has {threads} threads; CUDA allows at most {MAX_BLOCK_THREADS}")
        return dims

    @field_validator("args")
    @classmethod
    def _check_args(
        cls, args: tuple[BufferArg | ScalarArg, ...], info: ValidationInfo
    ) -> tuple[BufferArg | ScalarArg, ...]:
        buffers = info.data.get("buffers")
        if buffers is None:  # the buffers themselves are invalid; that error is reported
            return args
        for index, arg in enumerate(args):
            if isinstance(arg, BufferArg) and arg.buffer not in buffers:
                known = ", ".join(sorted(buffers)) or "none"
                raise ValueError(
                    f"argument {index} names buffer '{arg.buffer}', which is not declared (buffers: {known})"
                )
        return args


def nbytes(step: RawStep) -> int:
    return sum(b.size * np.dtype(b.dtype).itemsize * 2 for b in step.buffers.values())


def build(step: RawStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    kernel = cupy.RawKernel(step.source, step.function, options=tuple(step.options))
    try:
        kernel.compile()
    except cupy.cuda.compiler.CompileException as err:
        log = err.get_message() if hasattr(err, "get_message") else str(err)
        raise KernelCompileError(f"raw kernel '{step.function}' does not compile:\n{log}") from None
    except cupy.cuda.driver.CUDADriverError as err:
        raise KernelCompileError(f"raw kernel '{step.function}' cannot be loaded: {err}") from None
    buffers: dict[str, Any] = {}
    built = BuiltStep([])
    for name, spec in step.buffers.items():
        if spec.init == "random":
            array = random_array(spec.size, spec.dtype, context.rng)
        elif spec.init == "zeros":
            array = cupy.zeros(spec.size, dtype=spec.dtype)
        elif spec.init == "ones":
            array = cupy.ones(spec.size, dtype=spec.dtype)
        else:
            array = cupy.arange(spec.size, dtype=spec.dtype)
        buffers[name] = array
        base.with_initial(array, built, f"{prefix}.{name}")
    args = tuple(
        buffers[arg.buffer] if isinstance(arg, BufferArg) else np.dtype(arg.dtype).type(arg.scalar)
        for arg in step.args
    )
    call = partial(kernel, step.grid, step.block, args, shared_mem=step.shared_mem, stream=stream)
    built.calls = [call] * step.repeat
    return built


KIND = KindSpec(
    model=RawStep,
    build=build,
    nbytes=nbytes,
    nodes_per_launch=1,
    takes_stream=True,
    summary="your CUDA C kernel, compiled by NVRTC (`cupy.RawKernel`); a compile error shows the compiler's log",
    examples=(
        {
            "kind": "raw",
            "source": 'extern "C" __global__ void k(float* x) {}',
            "function": "k",
            "grid": 1,
            "block": 32,
            "buffers": {"x": {"size": 8}},
            "args": [{"buffer": "x"}],
        },
    ),
)
