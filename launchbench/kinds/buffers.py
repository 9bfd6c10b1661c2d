"""Buffers a builder allocates: device arrays of seeded random values (drawn on the device), and NumPy
arrays over pinned (page-locked) host memory, which the backend's rank channel uses too. CuPy is
imported inside the functions: the kinds import without a GPU.

Small buffers share draws: a buffer of up to ``SHARED_DRAW_MAX_BYTES`` is a view into one cuRAND draw
of ``SHARED_DRAW_BYTES`` (each view starting ``ALIGN_BYTES``-aligned, as CuPy's own allocations do), so
a case of thousands of small buffers (a 256-shape chain writes about 4,000) pays one seeding, one draw
and one synchronize per draw instead of per buffer. A larger buffer gets a draw of its own. Draws follow
the generator a builder passes: a new generator (a new case's builder) starts new draws, so a case's
values depend only on its own buffers' order and sizes, the same in every run. The last generator's
open draws (one per draw dtype, float32 and float64) stay allocated until another generator's first
buffer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SHARED_DRAW_BYTES = 64 << 20
SHARED_DRAW_MAX_BYTES = 1 << 20
ALIGN_BYTES = 512

_GENERATORS: dict[int, Any] = {}  # per device: one cuRAND Philox generator, seeded anew for every draw


@dataclass
class _Open:
    """One shared draw and how many of its elements are handed out."""

    values: Any  # a cupy array of uniform values in [0.5, 1.5)
    used: int = 0


@dataclass
class _Draws:
    """The shared draws of one generator on one device, by draw dtype."""

    rng: np.random.Generator
    device: int
    open: dict[np.dtype, _Open] = field(default_factory=dict)


_DRAWS: list[_Draws] = []  # the last generator's (one at most)


def _device_generator() -> Any:
    import cupy
    from cupy.cuda import curand

    device = cupy.cuda.Device().id
    if device not in _GENERATORS:
        _GENERATORS[device] = cupy.random.RandomState(0, method=curand.CURAND_RNG_PSEUDO_PHILOX4_32_10)
    return _GENERATORS[device]


def _uniform(count: int, draw: np.dtype, rng: np.random.Generator) -> Any:
    """``count`` values in [0.5, 1.5) of ``draw`` (float32 or float64), from a seed ``rng`` gives."""
    generator = _device_generator()
    generator.seed(int(rng.integers(0, 2**63)))
    return generator.uniform(0.5, 1.5, count, dtype=draw)


def _draws_of(rng: np.random.Generator) -> _Draws:
    import cupy

    device = cupy.cuda.Device().id
    if not _DRAWS or _DRAWS[0].rng is not rng or _DRAWS[0].device != device:
        _DRAWS[:] = [_Draws(rng, device)]
    return _DRAWS[0]


def _values(count: int, draw: np.dtype, rng: np.random.Generator) -> tuple[Any, bool]:
    """``count`` uniform values of ``draw``: a view into the generator's shared draw where they fit
    under SHARED_DRAW_MAX_BYTES, else a draw of their own; and whether a new draw was made."""
    if count * draw.itemsize > SHARED_DRAW_MAX_BYTES:
        return _uniform(count, draw, rng), True
    draws = _draws_of(rng)
    step = ALIGN_BYTES // draw.itemsize
    taken = -(-count // step) * step
    current = draws.open.get(draw)
    drew = current is None or current.used + taken > current.values.size
    if drew:
        current = draws.open[draw] = _Open(_uniform(SHARED_DRAW_BYTES // draw.itemsize, draw, rng))
    assert current is not None
    view = current.values[current.used : current.used + count]
    current.used += taken
    return view, drew


def random_array(size: int, dtype: str, rng: np.random.Generator) -> Any:
    """A device array of ``size`` random values of ``dtype`` (floats in [0.5, 1.5), integers below 100),
    drawn on the device by cuRAND's Philox generator from seeds ``rng`` gives (the same values every
    run); where a kernel wrote them, the device is waited for, so the values are in place when this
    returns, whatever stream reads them. A float32 or float64 array of up to SHARED_DRAW_MAX_BYTES is a
    view into a shared draw."""
    import cupy

    np_dtype = np.dtype(dtype)
    draw = np.dtype(np.float64 if np_dtype.itemsize == 8 else np.float32)
    values, drew = _values(size, draw, rng)
    if np_dtype == draw:
        out = values
    elif np_dtype.kind == "f":
        out = values.astype(np_dtype)
    else:
        high = min(100, int(np.iinfo(np_dtype).max))
        out = cupy.minimum((values - 0.5) * high, high - 1).astype(np_dtype)
    if drew or out is not values:
        cupy.cuda.Device().synchronize()
    return out


def pinned_empty(count: int, dtype: Any = np.uint8) -> np.ndarray:
    """A 1-D NumPy array of ``count`` elements over page-locked host memory (its ``base`` keeps the memory
    alive)."""
    import cupy

    dtype = np.dtype(dtype)
    memory = cupy.cuda.alloc_pinned_memory(max(1, count * dtype.itemsize))
    return np.frombuffer(memory, dtype=dtype, count=count)
