"""Buffers a builder allocates: device arrays of seeded random values, and NumPy arrays over pinned
(page-locked) host memory, which the backend's rank channel uses too. CuPy is imported inside the
functions: the kinds import without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np


def random_array(size: int, dtype: str, rng: np.random.Generator) -> Any:
    """A device array of ``size`` random values of ``dtype`` (floats in [0.5, 1.5), integers below 100)."""
    import cupy

    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":  # drawn in float32 (float64 for float64) and shifted in place: one pass each
        host = rng.random(size, dtype=np.float64 if np_dtype.itemsize == 8 else np.float32)
        host += 0.5
        host = host.astype(np_dtype, copy=False)
    else:
        high = min(100, np.iinfo(np_dtype).max)
        host = rng.integers(0, high, size, dtype=np_dtype, endpoint=False)
    return cupy.asarray(host)


def pinned_empty(count: int, dtype: Any = np.uint8) -> np.ndarray:
    """A 1-D NumPy array of ``count`` elements over page-locked host memory (its ``base`` keeps the memory
    alive)."""
    import cupy

    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(max(1, count * dtype.itemsize))
    return np.frombuffer(memory, dtype=dtype, count=count)
