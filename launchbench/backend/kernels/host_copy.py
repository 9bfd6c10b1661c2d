"""Host↔device copies for the ``h2d`` and ``d2h`` step kinds, through pinned host memory.

CuPy's own ``ndarray.get()``/``.set()`` refuse stream capture (RuntimeError), even from pinned memory;
``cupy.cuda.runtime.memcpyAsync`` from a pinned buffer is captured as one memcpy node. The host side is
a NumPy view of memory from ``cupy.cuda.alloc_pinned_memory``; the view keeps that memory alive, and the
builder keeps the view for the life of the case (the call itself holds only raw addresses).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import cupy
import numpy as np

HOST_TO_DEVICE = 1  # cudaMemcpyHostToDevice
DEVICE_TO_HOST = 2  # cudaMemcpyDeviceToHost


def pinned_empty(count: int, dtype: Any = np.uint8) -> np.ndarray:
    """A 1-D NumPy array of ``count`` elements over page-locked host memory (its ``base`` keeps the memory
    alive)."""
    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(max(1, count * dtype.itemsize))
    return np.frombuffer(memory, dtype=dtype, count=count)


def h2d_call(dst: cupy.ndarray, host: np.ndarray, nbytes: int, stream: cupy.cuda.Stream) -> Callable[[], None]:
    """Copy ``nbytes`` from pinned ``host`` into ``dst`` on ``stream`` (one memcpy node when captured)."""
    _check(dst.nbytes, host, nbytes)
    return partial(cupy.cuda.runtime.memcpyAsync, dst.data.ptr, host.ctypes.data, nbytes, HOST_TO_DEVICE, stream.ptr)


def d2h_call(host: np.ndarray, src: cupy.ndarray, nbytes: int, stream: cupy.cuda.Stream) -> Callable[[], None]:
    """Copy ``nbytes`` from ``src`` into pinned ``host`` on ``stream`` (one memcpy node when captured)."""
    _check(src.nbytes, host, nbytes)
    return partial(cupy.cuda.runtime.memcpyAsync, host.ctypes.data, src.data.ptr, nbytes, DEVICE_TO_HOST, stream.ptr)


def _check(device_nbytes: int, host: np.ndarray, nbytes: int) -> None:
    if nbytes > device_nbytes or nbytes > host.nbytes:
        raise ValueError(f"copy of {nbytes} bytes exceeds a buffer ({device_nbytes} bytes on device, {host.nbytes} on host)")
    if not host.flags.c_contiguous:
        raise ValueError("the host buffer must be C-contiguous")
