"""The floor's layers by name, and the context they are built in (one CuPy stream, the kernels' source
and PTX, a work directory for the C library)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import cupy

from launchbench.backend.floor import bindings_layer, cupy_layers, native_layer, torch_layer
from launchbench.backend.floor.base import FloorContext, LayerUnavailable, LayerWorkloads, kernel_source
from launchbench.backend.floor.ptx import compile_ptx
from launchbench.measure.clock import Clock
from launchbench.scenario.floor import Layer

Builder = Callable[[FloorContext, int], LayerWorkloads]
BUILDERS: dict[Layer, Builder] = {
    "c": native_layer.build_c,
    "bindings": bindings_layer.build_bindings,
    "cupy_raw": cupy_layers.build_raw,
    "cupy_raw_stream": cupy_layers.build_raw_stream,
    "cupy_elementwise": cupy_layers.build_elementwise,
    "cupy_ufunc": cupy_layers.build_ufunc,
    "torch": torch_layer.build_torch,
    "gpu": cupy_layers.build_gpu,
}


def open_context(
    device: int, clock: Clock, arg_counts: list[int], nodes: int, gpu_nodes: int, max_in_flight: int
) -> FloorContext:
    """A stream on ``device``, a one-float buffer for the pointer arguments and the empty kernels'
    source and PTX (None, with the reason, where NVRTC cannot make it)."""
    cupy.cuda.Device(device).use()
    stream = cupy.cuda.Stream(non_blocking=True)
    buffer = cupy.zeros(1, dtype=cupy.float32)
    source = kernel_source(sorted({0, *arg_counts}))
    try:
        ptx, reason = compile_ptx(source, str(cupy.cuda.Device(device).compute_capability)), None
    except LayerUnavailable as exc:
        ptx, reason = None, str(exc)
    workdir = tempfile.TemporaryDirectory(prefix="launchbench-floor-")
    ctx = FloorContext(
        stream=stream,
        device=device,
        clock=clock,
        max_in_flight=max_in_flight,
        nodes=nodes,
        gpu_nodes=gpu_nodes,
        buffer=buffer,
        pointer=int(buffer.data.ptr),
        source=source,
        ptx=ptx,
        ptx_reason=reason,
        workdir=Path(workdir.name),
    )
    ctx.closers.append(workdir.cleanup)
    return ctx


def build_layer(ctx: FloorContext, layer: Layer, args: int) -> LayerWorkloads:
    """The layer's workloads at ``args`` kernel arguments; LayerUnavailable where it cannot run here."""
    return BUILDERS[layer](ctx, args)
