"""Buffers a builder allocates: device arrays of seeded random values (drawn on the device), and NumPy
arrays over pinned (page-locked) host memory, which the backend's rank channel uses too. CuPy is
imported inside the functions: the kinds import without a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np

_GENERATORS: dict[int, Any] = {}  # per device: one cuRAND Philox generator, seeded anew for every buffer


def _device_generator() -> Any:
    import cupy
    from cupy.cuda import curand

    device = cupy.cuda.Device().id
    if device not in _GENERATORS:
        _GENERATORS[device] = cupy.random.RandomState(0, method=curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    return _GENERATORS[device]


def random_array(size: int, dtype: str, rng: np.random.Generator) -> Any:
    """A device array of ``size`` random values of ``dtype`` (floats in [0.5, 1.5), integers below 100),
    drawn on the device by cuRAND's Philox generator from a seed ``rng`` gives (the same values every
    run); the device is waited for, so the values are in place when this returns, whatever stream reads
    them."""
    import cupy

    np_dtype = np.dtype(dtype)
    generator = _device_generator()
    generator.seed(int(rng.integers(0, 2**63)))
    draw = np.float64 if np_dtype.itemsize == 8 else np.float32
    if np_dtype.kind == "f":
        out = generator.uniform(0.5, 1.5, size, dtype=draw).astype(np_dtype, copy=False)
    else:
        high = min(100, int(np.iinfo(np_dtype).max))
        out = (generator.random_sample(size, dtype=np.float64) * high).astype(np_dtype)
    cupy.cuda.Device().synchronize()
    return out


def pinned_empty(count: int, dtype: Any = np.uint8) -> np.ndarray:
    """A 1-D NumPy array of ``count`` elements over page-locked host memory (its ``base`` keeps the memory
    alive)."""
    import cupy

    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(max(1, count * dtype.itemsize))
    return np.frombuffer(memory, dtype=dtype, count=count)
