"""``h2d`` and ``d2h``: host↔device copies through pinned host memory.

CuPy's own ``ndarray.get()``/``.set()`` refuse stream capture (RuntimeError), even from pinned memory;
``cupy.cuda.runtime.memcpyAsync`` from a pinned buffer is captured as one memcpy node. The host side is
a NumPy view of memory from ``cupy.cuda.alloc_pinned_memory``; the view keeps that memory alive, and the
builder keeps the view for the life of the case (the call itself holds only raw addresses).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.kinds import base, buffers
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_BYTES, Int

HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
DEVICE_TO_HOST = 2  # cudaMemcpyDeviceToHost


class HostCopyStep(StepBase):
    """h2d: pinned host → device;  d2h: device → pinned host;  ``bytes`` bytes through cudaMemcpyAsync."""

    kind: Literal["h2d", "d2h"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)


def h2d_call(dst: Any, host: np.ndarray, nbytes: int, stream: Any) -> Callable[[], None]:
    """Copy ``nbytes`` from pinned ``host`` into device array ``dst`` on ``stream`` (one memcpy node when
    captured)."""
    import cupy

    _check(dst.nbytes, host, nbytes)
    return partial(
        cupy.cuda.runtime.memcpyAsync, dst.data.ptr, host.ctypes.data, nbytes, HOST_TO_DEVICE, stream.ptr
    )


def d2h_call(host: np.ndarray, src: Any, nbytes: int, stream: Any) -> Callable[[], None]:
    """Copy ``nbytes`` from device array ``src`` into pinned ``host`` on ``stream`` (one memcpy node when
    captured)."""
    import cupy

    _check(src.nbytes, host, nbytes)
    return partial(
        cupy.cuda.runtime.memcpyAsync, host.ctypes.data, src.data.ptr, nbytes, DEVICE_TO_HOST, stream.ptr
    )


def _check(device_nbytes: int, host: np.ndarray, nbytes: int) -> None:
    if nbytes > device_nbytes or nbytes > host.nbytes:
        raise ValueError(
            f"copy of {nbytes} bytes exceeds a buffer ({device_nbytes} bytes on device, {host.nbytes} on host)"
        )
    if not host.flags.c_contiguous:
        raise ValueError("the host buffer must be C-contiguous")


def build(step: HostCopyStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    host = buffers.pinned_empty(step.bytes)
    if step.kind == "h2d":
        host[...] = context.rng.integers(0, 256, step.bytes, dtype=np.uint8)
        dst = cupy.full(step.bytes, base.POISON_BYTE, dtype=cupy.uint8)
        return base.repeated(
            h2d_call(dst, host, step.bytes, stream), step.repeat, dst, f"{prefix}.dst", [host]
        )
    src = buffers.random_array(step.bytes, "uint8", context.rng)
    host.fill(base.POISON_BYTE)
    # a host buffer: check_outputs compares it too
    return base.repeated(d2h_call(host, src, step.bytes, stream), step.repeat, host, f"{prefix}.host", [src])


KIND = KindSpec(
    model=HostCopyStep,
    build=build,
    nbytes=lambda step: step.bytes * 2,
    nodes_per_launch=1,
    takes_stream=True,
    summary="host↔device `cudaMemcpyAsync` through pinned host memory (CuPy's own copies refuse capture; "
    "this captures)",
    examples=({"kind": "h2d", "bytes": 32}, {"kind": "d2h", "bytes": 32}),
)
