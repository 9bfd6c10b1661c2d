"""``while_loop``: a data-dependent loop, ``x ← alpha·x`` (``body`` kernels per pass) while
max|x| > threshold and fewer than ``max_iters`` passes ran.

Each launch of the step copies the initial vector into x (so every iteration does the same passes),
then a check kernel computes max|x| on the GPU and writes the loop flag and the pass count. Run
eagerly, the loop is the host loop users write: the flag is copied back (device→host into pinned
memory, then a synchronize) before every pass. Captured, it is a conditional WHILE node (CUDA 12.4+):
the check kernel sets the node's condition with cudaGraphSetConditional, and the body (the ``body``
kernels and the check) is captured on the step's own body stream into the node's body graph, so the
GPU runs the whole loop from one graph launch. Where the installation has no conditional nodes, the
capture fails and the graph row says why; the eager loop still runs.

The initial vector is ``0.5 + i/size`` (i = 0 … size−1) in the step's dtype, so the number of passes
is known without a GPU: multiplying by alpha keeps the largest element largest, so the count follows
from its value alone (``iterations``). The host reference for the output check repeats the loop in
NumPy in the same dtype (a correctly rounded product on both sides: bit for bit).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.kinds import base, buffers, graph_nodes
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import Float, Int

MAX_LOOP_ELEMENTS = 1 << 24  # one block reduces the vector per pass: keep it to what one block scans fast
MAX_ITERS = 100_000
MAX_BODY = 1000
CHECK_THREADS = 256
DEVICE_TO_DEVICE = 3  # cudaMemcpyDeviceToDevice
DEVICE_TO_HOST = 2  # cudaMemcpyDeviceToHost
_CTYPE = {"float32": "float", "float64": "double"}


class WhileLoopStep(StepBase):
    """x ← alpha·x (``body`` kernels per pass) while max|x| > threshold, at most ``max_iters`` passes:
    on the GPU as a conditional WHILE node when captured, as a host loop reading a flag back eagerly."""

    kind: Literal["while_loop"]
    size: Int = Field(..., ge=1, le=MAX_LOOP_ELEMENTS, description="elements of x")
    dtype: Literal["float32", "float64"] = "float32"
    alpha: Float = Field(0.5, gt=0, lt=1, description="factor each body kernel multiplies x by")
    threshold: Float = Field(0.0, ge=0, description="the loop runs while max|x| is above this")
    max_iters: Int = Field(1000, ge=1, le=MAX_ITERS, description="the loop runs at most this many passes")
    body: Int = Field(1, ge=1, le=MAX_BODY, description="kernels per pass of the loop's body")

    def iterations(self) -> int:
        """Passes the loop runs (the same in every launch: the step starts again from the same x)."""
        return loop_iterations(self.size, self.dtype, self.alpha, self.threshold, self.max_iters, self.body)

    def launches(self) -> int:
        """Per chain iteration: the copy, the first check, and per pass the body kernels and a check."""
        return self.repeat * (2 + self.iterations() * (self.body + 1))


def initial_vector(size: int, dtype: str) -> np.ndarray:
    return (0.5 + np.arange(size, dtype=np.float64) / size).astype(dtype)


@cache
def loop_iterations(size: int, dtype: str, alpha: float, threshold: float, max_iters: int, body: int) -> int:
    scalar = np.dtype(dtype).type
    largest, factor, bound = scalar(0.5 + (size - 1) / size), scalar(alpha), scalar(threshold)
    passes = 0
    while passes < max_iters and largest > bound:
        for _ in range(body):
            largest = largest * factor
        passes += 1
    return passes


def host_reference(step: WhileLoopStep) -> dict[str, np.ndarray]:
    """x and the pass count after one launch, computed on the host in the step's dtype."""
    x = initial_vector(step.size, step.dtype)
    factor, bound = np.dtype(step.dtype).type(step.alpha), np.dtype(step.dtype).type(step.threshold)
    passes = 0
    while passes < step.max_iters and np.max(np.abs(x)) > bound:
        for _ in range(step.body):
            np.multiply(x, factor, out=x)
        passes += 1
    return {"x": x, "count": np.array([passes], dtype=np.int32)}


_CHECK = r"""
__device__ unsigned int launchbench_check(const T* x, long long n, T threshold, int* count,
                                          int max_iters, int* flag, int first) {
    __shared__ T best[256];
    T m = 0;
    for (long long i = threadIdx.x; i < n; i += blockDim.x) {
        T v = x[i] < 0 ? -x[i] : x[i];
        m = v > m ? v : m;
    }
    best[threadIdx.x] = m;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && best[threadIdx.x + s] > best[threadIdx.x]) best[threadIdx.x] = best[threadIdx.x + s];
        __syncthreads();
    }
    unsigned int go = 0;
    if (threadIdx.x == 0) {
        int passes = first ? 0 : *count + 1;
        *count = passes;
        go = (best[0] > threshold) && (passes < max_iters);
        *flag = (int)go;
    }
    return go;
}
"""
_EAGER_KERNEL = r"""
extern "C" __global__ void launchbench_while_check(const T* x, long long n, T threshold, int* count,
                                                   int max_iters, int* flag, int first) {
    launchbench_check(x, n, threshold, count, max_iters, flag, first);
}
"""
_GRAPH_KERNEL = r"""
extern "C" __global__ void launchbench_while_check_graph(const T* x, long long n, T threshold, int* count,
                                                         int max_iters, int* flag, int first,
                                                         cudaGraphConditionalHandle handle) {
    unsigned int go = launchbench_check(x, n, threshold, count, max_iters, flag, first);
    if (threadIdx.x == 0) cudaGraphSetConditional(handle, go);
}
"""
CHECK_KERNEL = "launchbench_while_check"
GRAPH_CHECK_KERNEL = "launchbench_while_check_graph"


def check_source(dtype: str, graph: bool) -> str:
    """The check kernel (one block of CHECK_THREADS): max|x| against the threshold, the pass count
    against max_iters; it writes the flag and the count, and in the graph's version also sets the WHILE
    condition (so only that version needs the device runtime's cudaGraphSetConditional)."""
    head = f"typedef {_CTYPE[dtype]} T;\n"
    if graph:
        return graph_nodes.SET_CONDITIONAL_DECLARATION + head + _CHECK + _GRAPH_KERNEL
    return head + _CHECK + _EAGER_KERNEL


class WhileLoop:
    """One while_loop step's buffers and its launch: the host loop eagerly, a WHILE node when captured."""

    def __init__(self, step: WhileLoopStep, context: BuildContext, stream: Any):
        import cupy

        self.step = step
        self.stream = stream
        self.body_stream = cupy.cuda.Stream(non_blocking=True)
        self.x0 = cupy.asarray(initial_vector(step.size, step.dtype))
        self.x = self.x0.copy()
        self.count = cupy.zeros(1, dtype=cupy.int32)
        self.flag = cupy.zeros(1, dtype=cupy.int32)
        self.flag_host = buffers.pinned_empty(1, np.int32)
        self.alpha = np.dtype(step.dtype).type(step.alpha)
        self.check = context.kernel(check_source(step.dtype, graph=False), CHECK_KERNEL)
        self.graph_check: Any = None
        self.graph_unavailable = ""
        try:
            self.graph_check = context.kernel(check_source(step.dtype, graph=True), GRAPH_CHECK_KERNEL)
        except Exception as err:  # noqa: BLE001 - the eager loop stands; the graph row says why
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            self.graph_unavailable = f"the kernel that sets the WHILE condition does not compile: {first}"
        self._args = (
            self.x,
            np.int64(step.size),
            np.dtype(step.dtype).type(step.threshold),
            self.count,
            np.int32(step.max_iters),
            self.flag,
        )

    def _copy_initial(self) -> None:
        import cupy

        nbytes = self.x.nbytes
        cupy.cuda.runtime.memcpyAsync(
            self.x.data.ptr, self.x0.data.ptr, nbytes, DEVICE_TO_DEVICE, self.stream.ptr
        )

    def _body(self) -> None:
        import cupy

        for _ in range(self.step.body):
            cupy.multiply(self.x, self.alpha, out=self.x)

    def __call__(self) -> None:
        if self.stream.is_capturing():
            self._capture()
        else:
            self._host_loop()

    def _host_loop(self) -> None:
        import cupy

        stream = self.stream
        self._copy_initial()
        self.check((1,), (CHECK_THREADS,), (*self._args, np.int32(1)), stream=stream)
        host = self.flag_host
        with stream:
            while True:
                cupy.cuda.runtime.memcpyAsync(
                    host.ctypes.data, self.flag.data.ptr, 4, DEVICE_TO_HOST, stream.ptr
                )
                stream.synchronize()
                if not host[0]:
                    return
                self._body()
                self.check((1,), (CHECK_THREADS,), (*self._args, np.int32(0)), stream=stream)

    def _capture(self) -> None:
        if self.graph_check is None:
            raise graph_nodes.GraphFeatureUnavailable(self.graph_unavailable)
        stream = self.stream
        self._copy_initial()
        handle = graph_nodes.conditional_handle(stream.ptr)
        value = np.uint64(graph_nodes.handle_value(handle))
        self.graph_check((1,), (CHECK_THREADS,), (*self._args, np.int32(1), value), stream=stream)
        body = graph_nodes.append_while_node(stream.ptr, handle)
        with graph_nodes.capturing_into(body, self.body_stream.ptr), self.body_stream:
            self._body()
            self.graph_check(
                (1,), (CHECK_THREADS,), (*self._args, np.int32(0), value), stream=self.body_stream
            )


def nbytes(step: WhileLoopStep) -> int:
    return step.size * np.dtype(step.dtype).itemsize * 3 + 16  # x0, x, x's initial copy; count, flag


def build(step: WhileLoopStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    loop = WhileLoop(step, context, stream)
    built = BuiltStep([loop] * step.repeat, keep=[loop])
    base.with_initial(loop.x, built, f"{prefix}.x")
    base.with_initial(loop.count, built, f"{prefix}.count")
    built.reference = lambda: {f"{prefix}.{name}": value for name, value in host_reference(step).items()}
    return built


KIND = KindSpec(
    model=WhileLoopStep,
    build=build,
    nbytes=nbytes,
    nodes_per_launch=None,
    takes_stream=True,
    summary="x ← alpha·x while max\\|x\\| > threshold: eagerly a host loop reading a flag back each pass, "
    "captured one conditional WHILE node ([graph-features.md](graph-features.md))",
    examples=({"kind": "while_loop", "size": 1000, "alpha": 0.5, "threshold": 0.1, "body": 2},),
    graph_nodes=lambda step: 3 * step.repeat,  # the copy, the first check, the WHILE node (its body apart)
)
