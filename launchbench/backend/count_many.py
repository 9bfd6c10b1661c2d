"""How many elements differ between two flat device arrays, per segment, in one kernel launch. The output
check of a chain at 256 shapes compares snapshots of about 3,000 outputs (404 million float32 elements),
four times a pass. ``segment_counts`` reads each pair of elements once (``launchbench_count_differing``:
each thread sums its elements, each warp adds its sum to its segment's count) for the dtypes in
``C_TYPES``: 1.3 ms a comparison on the H200, where CuPy's comparisons, a cast to int64 and a
cumulative sum, with the int64 arrays they allocate, took 19.2 ms
(results/speed/shape_changes-h200-f/count_bench.json). Any other dtype (float16, complex) is counted
by the cumulative sum. Two NaNs are equal, as ``np.array_equal(equal_nan=True)`` has them."""

from __future__ import annotations

from functools import cache
from typing import Any

import cupy
import numpy as np

C_TYPES = {
    np.dtype(np.float32): "float",
    np.dtype(np.float64): "double",
    np.dtype(np.int8): "signed char",
    np.dtype(np.int16): "short",
    np.dtype(np.int32): "int",
    np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char",
    np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int",
    np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.bool_): "bool",
}
_SOURCE = r"""
typedef %s T;
extern "C" __global__ void launchbench_count_differing(
    const T* a, const T* b, const long long* starts, const long long* stops,
    unsigned long long* counts, int segments) {
  for (int s = blockIdx.y; s < segments; s += gridDim.y) {
    unsigned long long n = 0;
    for (long long i = starts[s] + (long long)blockIdx.x * blockDim.x + threadIdx.x; i < stops[s];
         i += (long long)gridDim.x * blockDim.x) {
      T x = a[i], y = b[i];
      n += (x != y) && !(x != x && y != y);
    }
    for (int offset = 16; offset > 0; offset >>= 1) n += __shfl_down_sync(0xffffffffu, n, offset);
    if ((threadIdx.x & 31) == 0 && n) atomicAdd(&counts[s], n);
  }
}
"""
THREADS = 256  # whole warps: every lane takes part in the warp's sum
MAX_BLOCKS_X = 64
MAX_BLOCKS_Y = 65_535


@cache
def _kernel(dtype: np.dtype) -> Any:
    return cupy.RawKernel(_SOURCE % C_TYPES[dtype], "launchbench_count_differing")


def differing(a: Any, b: Any) -> Any:
    """Per element, True where ``a`` and ``b`` differ (two NaNs do not); CuPy arrays on the device,
    NumPy arrays on the host."""
    xp = cupy.get_array_module(a)
    differ = a != b
    if a.dtype.kind in "fc":
        differ &= ~(xp.isnan(a) & xp.isnan(b))
    return differ


def _by_cumsum(a: Any, b: Any, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The counts by elementwise comparison and a cumulative sum (any dtype CuPy compares)."""
    running = cupy.concatenate([cupy.zeros(1, cupy.int64), cupy.cumsum(differing(a, b).astype(np.int64))])
    return np.asarray(cupy.asnumpy(running[cupy.asarray(stops)] - running[cupy.asarray(starts)]))


def segment_counts(a: Any, b: Any, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Per segment ``a[start:stop]`` against ``b[start:stop]`` (flat device arrays of one dtype, int64
    bounds), the number of elements that differ, counted on the current stream and copied to the host."""
    if a.dtype not in C_TYPES or not len(starts):
        return _by_cumsum(a, b, starts, stops)
    counts = cupy.zeros(len(starts), dtype=cupy.uint64)
    longest = int((stops - starts).max())
    grid = (max(1, min(MAX_BLOCKS_X, -(-longest // THREADS))), min(len(starts), MAX_BLOCKS_Y))
    bounds = (cupy.asarray(starts, dtype=cupy.int64), cupy.asarray(stops, dtype=cupy.int64))
    _kernel(a.dtype)(grid, (THREADS,), (a, b, *bounds, counts, np.int32(len(starts))))
    return np.asarray(cupy.asnumpy(counts)).astype(np.int64)
