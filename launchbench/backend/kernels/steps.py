"""Build each step of a chain on the GPU: allocate its buffers (once, before any capture) and return
the launch calls, the buffers it writes and how to restore their initial contents.

Every call writes through ``out=`` (or in place) into buffers allocated here, so the addresses frozen
into a captured graph stay valid for the graph's life.

A step with ``stream: N`` (N > 0) is bound to auxiliary stream N: kernels that take a stream get it
passed, the others (CuPy ufuncs, reductions, the user's python ``run``) are wrapped in ``with stream:``,
one wrapper per launch. Forking those streams from the main one and joining them back is the backend's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import cupy
import numpy as np

from launchbench.backend.kernels.host_copy import d2h_call, h2d_call, pinned_empty
from launchbench.backend.kernels.python_step import call_user_function, load_callable
from launchbench.errors import LaunchbenchError
from launchbench.scenario.model import (
    CopyStep,
    ElementwiseStep,
    EmptyStep,
    HostCopyStep,
    MemsetStep,
    PythonStep,
    RawStep,
    ReductionStep,
)

EMPTY_SOURCE = 'extern "C" __global__ void launchbench_empty() {}'
INPUT_SEED = 1234  # initial buffer contents are the same random values in every run
FMA_KERNEL = cupy.ElementwiseKernel("T x, T alpha", "T y", "y = alpha * x + y", "launchbench_fma")
POISON_BYTE = 0xAB


class KernelCompileError(LaunchbenchError):
    """A raw kernel that NVRTC cannot compile; the message holds the compiler's log."""


@dataclass
class BuiltStep:
    calls: list[Callable[[], Any]]
    outputs: dict[str, Any] = field(default_factory=dict)  # cupy arrays, or numpy arrays in pinned host memory
    resets: list[tuple[Any, Any]] = field(default_factory=list)
    reset_calls: list[Callable[[], Any]] = field(default_factory=list)  # a python step's own reset
    keep: list[Any] = field(default_factory=list)  # buffers the calls use by raw address only

    def reset(self) -> None:
        for target, initial in self.resets:
            target[...] = initial
        for call in self.reset_calls:
            call()


def step_bytes(step: Any) -> int:
    """Device memory a step allocates (buffers and their initial copies), to refuse what cannot fit."""
    if isinstance(step, EmptyStep):
        return 0
    if isinstance(step, ElementwiseStep):
        item = np.dtype(step.dtype).itemsize
        buffers = 1 if step.kind == "scale" else 2
        return step.size * item * (buffers + 1)
    if isinstance(step, ReductionStep):
        return step.size * np.dtype(step.dtype).itemsize + 64
    if isinstance(step, (CopyStep, MemsetStep)):
        return step.bytes * 3
    if isinstance(step, RawStep):
        return sum(b.size * np.dtype(b.dtype).itemsize * 2 for b in step.buffers.values())
    if isinstance(step, HostCopyStep):
        return step.bytes * 2
    return 0  # a python step allocates what its function allocates


def _random(size: int, dtype: str, rng: np.random.Generator) -> cupy.ndarray:
    np_dtype = np.dtype(dtype)
    if np_dtype.kind == "f":
        host = rng.uniform(0.5, 1.5, size).astype(np_dtype)
    else:
        high = min(100, np.iinfo(np_dtype).max)
        host = rng.integers(0, high, size, endpoint=False).astype(np_dtype)
    return cupy.asarray(host)


def _with_initial(array: Any, built: BuiltStep, name: str) -> None:
    built.outputs[name] = array
    built.resets.append((array, array.copy()))


def _on_stream(stream: cupy.cuda.Stream, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` made current-stream-agnostic: it launches on ``stream`` whatever stream is current."""

    def on_stream() -> Any:
        with stream:
            return call()

    return on_stream


class StepBuilder:
    """Turns validated step models into BuiltSteps: on ``stream``, or on ``streams[step.stream]`` for a
    step with ``stream: N`` (N > 0). ``source`` is the scenario file (python steps import beside it)."""

    def __init__(
        self,
        stream: cupy.cuda.Stream,
        streams: Mapping[int, cupy.cuda.Stream] | None = None,
        source: str = "",
    ):
        self.stream = stream
        self.streams = {0: stream, **dict(streams or {})}
        self.source = source
        self.rng = np.random.default_rng(INPUT_SEED)
        self._empty = cupy.RawKernel(EMPTY_SOURCE, "launchbench_empty")
        self._empty.compile()

    def _stream_of(self, step: Any) -> cupy.cuda.Stream:
        index = getattr(step, "stream", 0)
        if index not in self.streams:
            raise LaunchbenchError(f"step on stream {index}, which the backend did not create")
        return self.streams[index]

    def build(self, step: Any, index: int) -> BuiltStep:
        stream = self._stream_of(step)
        built = self._build(step, f"step{index}.{step.kind}", stream)
        if stream is not self.stream and not isinstance(step, (EmptyStep, RawStep, CopyStep, MemsetStep, HostCopyStep)):
            built.calls = [_on_stream(stream, call) for call in built.calls]  # these launch on the current stream
        return built

    def _build(self, step: Any, prefix: str, stream: cupy.cuda.Stream) -> BuiltStep:
        if isinstance(step, EmptyStep):
            call = partial(self._empty, (step.grid,), (step.block,), (), stream=stream)
            return BuiltStep([call] * step.repeat)
        if isinstance(step, ElementwiseStep):
            return self._elementwise(step, prefix)
        if isinstance(step, ReductionStep):
            x = _random(step.size, step.dtype, self.rng)
            out = cupy.zeros((), dtype=step.dtype)
            built = BuiltStep([partial(cupy.sum, x, out=out)] * step.repeat)
            _with_initial(out, built, f"{prefix}.out")
            return built
        if isinstance(step, CopyStep):
            src = _random(step.bytes, "uint8", self.rng)
            dst = cupy.full(step.bytes, POISON_BYTE, dtype=cupy.uint8)
            call = partial(dst.data.copy_from_device_async, src.data, step.bytes, stream)
            built = BuiltStep([call] * step.repeat)
            _with_initial(dst, built, f"{prefix}.dst")
            return built
        if isinstance(step, MemsetStep):
            dst = _random(step.bytes, "uint8", self.rng)
            call = partial(dst.data.memset_async, step.value, step.bytes, stream)
            built = BuiltStep([call] * step.repeat)
            _with_initial(dst, built, f"{prefix}.dst")
            return built
        if isinstance(step, RawStep):
            return self._raw(step, prefix, stream)
        if isinstance(step, HostCopyStep):
            return self._host_copy(step, prefix, stream)
        if isinstance(step, PythonStep):
            return self._python(step, prefix, stream)
        raise LaunchbenchError(f"step kind {step.kind!r} has no GPU implementation")

    def _host_copy(self, step: HostCopyStep, prefix: str, stream: cupy.cuda.Stream) -> BuiltStep:
        host = pinned_empty(step.bytes)
        if step.kind == "h2d":
            host[...] = self.rng.integers(0, 256, step.bytes, dtype=np.uint8)
            dst = cupy.full(step.bytes, POISON_BYTE, dtype=cupy.uint8)
            built = BuiltStep([h2d_call(dst, host, step.bytes, stream)] * step.repeat, keep=[host])
            _with_initial(dst, built, f"{prefix}.dst")
            return built
        src = _random(step.bytes, "uint8", self.rng)
        host.fill(POISON_BYTE)
        built = BuiltStep([d2h_call(host, src, step.bytes, stream)] * step.repeat, keep=[src])
        _with_initial(host, built, f"{prefix}.host")  # a host buffer: check_outputs compares it too
        return built

    def _python(self, step: PythonStep, prefix: str, stream: cupy.cuda.Stream) -> BuiltStep:
        function = load_callable(step.callable, self.source)
        with stream:
            work = call_user_function(function, step.callable, self.source, cupy, stream, step.args)
            built = BuiltStep([work.run] * step.repeat)
            for name, array in work.outputs.items():
                if work.reset is None:
                    _with_initial(array, built, f"{prefix}.{name}")
                else:
                    built.outputs[f"{prefix}.{name}"] = array
            if work.reset is not None:
                built.reset_calls.append(work.reset)
        stream.synchronize()  # the function may have written its initial data on this stream
        return built

    def _elementwise(self, step: ElementwiseStep, prefix: str) -> BuiltStep:
        x = _random(step.size, step.dtype, self.rng)
        alpha = np.dtype(step.dtype).type(step.alpha)
        if step.kind == "scale":
            built = BuiltStep([partial(cupy.multiply, x, alpha, out=x)] * step.repeat)
            _with_initial(x, built, f"{prefix}.x")
            return built
        y = _random(step.size, step.dtype, self.rng)
        call = partial(cupy.add, x, y, out=y) if step.kind == "add" else partial(FMA_KERNEL, x, alpha, y)
        built = BuiltStep([call] * step.repeat)
        _with_initial(y, built, f"{prefix}.y")
        return built

    def _raw(self, step: RawStep, prefix: str, stream: cupy.cuda.Stream) -> BuiltStep:
        kernel = cupy.RawKernel(step.source, step.function, options=tuple(step.options))
        try:
            kernel.compile()
        except cupy.cuda.compiler.CompileException as err:
            log = err.get_message() if hasattr(err, "get_message") else str(err)
            raise KernelCompileError(f"raw kernel '{step.function}' does not compile:\n{log}") from None
        except cupy.cuda.driver.CUDADriverError as err:
            raise KernelCompileError(f"raw kernel '{step.function}' cannot be loaded: {err}") from None
        buffers: dict[str, cupy.ndarray] = {}
        built = BuiltStep([])
        for name, spec in step.buffers.items():
            if spec.init == "random":
                array = _random(spec.size, spec.dtype, self.rng)
            elif spec.init == "zeros":
                array = cupy.zeros(spec.size, dtype=spec.dtype)
            elif spec.init == "ones":
                array = cupy.ones(spec.size, dtype=spec.dtype)
            else:
                array = cupy.arange(spec.size, dtype=spec.dtype)
            buffers[name] = array
            _with_initial(array, built, f"{prefix}.{name}")
        args = tuple(
            buffers[arg.buffer] if hasattr(arg, "buffer") else np.dtype(arg.dtype).type(arg.scalar) for arg in step.args
        )
        call = partial(kernel, step.grid, step.block, args, shared_mem=step.shared_mem, stream=stream)
        built.calls = [call] * step.repeat
        return built
