"""A tiled shared-memory SGEMM as a ``cupy.RawKernel``: C = alpha·op(A)·op(B) + beta·C, float32, row-major.

Why not ``cupy.matmul``: it calls cuBLAS, and CuPy refuses cuBLAS inside a stream capture
(NotImplementedError, cupy/cupy#6290), so a chain with a matmul cannot become a CUDA Graph. This kernel
is captured like any other. It is a plain 16×16-tile kernel (one output per thread), correct for any
M, N, K (every load and store is bounds-checked), a few TFLOP/s rather than cuBLAS's speed: what
launchbench measures here is the cost of launching a training step, not the fastest GEMM.

``op(A)`` is A or Aᵀ (``trans_a``), ``op(B)`` is B or Bᵀ (``trans_b``): the backward pass of a layer
needs Xᵀ·dZ and dZ·Wᵀ, and the flags read the stored matrices transposed instead of copying them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

TILE = 16

SGEMM_SOURCE = r"""
#define TILE 16
extern "C" __global__ void launchbench_sgemm(
    const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
    const int M, const int N, const int K, const int lda, const int ldb, const int ldc,
    const int trans_a, const int trans_b, const float alpha, const float beta)
{
    // As[i][k]: a TILE×TILE block of op(A); Bs[k][j]: one of op(B). +1 column: no bank conflicts when
    // a transposed tile is stored column-wise.
    __shared__ float As[TILE][TILE + 1];
    __shared__ float Bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;   // row of C this thread computes
    const int col = blockIdx.x * TILE + tx;   // column of C this thread computes
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        // Loads: consecutive threads (tx) read consecutive addresses in either layout.
        if (trans_a) {  // op(A)[i][k] = A[k][i]
            const int i = blockIdx.y * TILE + tx, k = k0 + ty;
            As[tx][ty] = (i < M && k < K) ? A[(size_t)k * lda + i] : 0.0f;
        } else {        // op(A)[i][k] = A[i][k]
            const int k = k0 + tx;
            As[ty][tx] = (row < M && k < K) ? A[(size_t)row * lda + k] : 0.0f;
        }
        if (trans_b) {  // op(B)[k][j] = B[j][k]
            const int j = blockIdx.x * TILE + ty, k = k0 + tx;
            Bs[tx][ty] = (j < N && k < K) ? B[(size_t)j * ldb + k] : 0.0f;
        } else {        // op(B)[k][j] = B[k][j]
            const int k = k0 + ty;
            Bs[ty][tx] = (k < K && col < N) ? B[(size_t)k * ldb + col] : 0.0f;
        }
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) {
        float* c = C + (size_t)row * ldc + col;
        *c = (beta == 0.0f) ? alpha * acc : alpha * acc + beta * *c;  // beta 0: C is never read
    }
}
"""


def _leading_dim(name: str, array: Any) -> int:
    if array.ndim != 2:
        raise ValueError(f"{name} must be 2-D, not {array.ndim}-D")
    if array.dtype != np.float32:
        raise ValueError(f"{name} must be float32, not {array.dtype}")
    if array.strides[1] != 4 or array.strides[0] % 4 or array.strides[0] < 4 * array.shape[1]:
        raise ValueError(
            f"{name} must be row-major with unit column stride (pass trans_* instead of a transposed view)"
        )
    return array.strides[0] // 4


class Gemm:
    """The compiled kernel. ``bind`` checks shapes once and returns a zero-argument launch."""

    def __init__(self, xp: Any):
        self.xp = xp
        self.kernel = xp.RawKernel(SGEMM_SOURCE, "launchbench_sgemm")
        self.kernel.compile()

    def bind(
        self,
        a: Any,
        b: Any,
        out: Any,
        *,
        trans_a: bool = False,
        trans_b: bool = False,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> Callable[[], None]:
        """A launch computing ``out = alpha·op(a)·op(b) + beta·out`` on the current stream."""
        lda, ldb, ldc = _leading_dim("a", a), _leading_dim("b", b), _leading_dim("out", out)
        m, k = (a.shape[1], a.shape[0]) if trans_a else a.shape
        k2, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
        if k != k2 or out.shape != (m, n):
            raise ValueError(
                f"shapes do not multiply: op(a) is {m}×{k}, op(b) is {k2}×{n}, out is {out.shape}"
            )
        if m > 65535 * TILE:
            raise ValueError(f"M={m} exceeds the grid's y limit")
        grid = (math.ceil(n / TILE), math.ceil(m / TILE))
        i32 = np.int32
        args = (
            a,
            b,
            out,
            i32(m),
            i32(n),
            i32(k),
            i32(lda),
            i32(ldb),
            i32(ldc),
            i32(trans_a),
            i32(trans_b),
            np.float32(alpha),
            np.float32(beta),
        )
        return partial(self.kernel, grid, (TILE, TILE), args)

    def __call__(self, a: Any, b: Any, out: Any, **flags: Any) -> Any:
        self.bind(a, b, out, **flags)()
        return out


def check_against_cublas(
    xp: Any, m: int, n: int, k: int, trans_a: bool = False, trans_b: bool = False, seed: int = 0
) -> float:
    """Relative error (max |C − C_ref| / max |C_ref|) of the RawKernel GEMM against ``cupy.matmul``
    (cuBLAS) in float64 on the same float32 inputs, for random normal matrices."""
    rng = np.random.default_rng(seed)
    a = xp.asarray(rng.standard_normal((k, m) if trans_a else (m, k), dtype=np.float32))
    b = xp.asarray(rng.standard_normal((n, k) if trans_b else (k, n), dtype=np.float32))
    out = xp.full((m, n), np.nan, dtype=np.float32)  # beta = 0 must never read it
    Gemm(xp)(a, b, out, trans_a=trans_a, trans_b=trans_b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = xp.matmul(a64.T if trans_a else a64, b64.T if trans_b else b64)
    return float(xp.abs(out - ref).max() / xp.abs(ref).max())
