"""Bare loops of launchbench floor's Python layers, each the plainest code a user would write, importing
nothing of launchbench: the standalone references its layers are held to (benchmarks/floor_fidelity.py).

One process measures one layer (at every argument count and in both modes): COUNT iterations per batch,
the queue bounded as launchbench bounds it (an event recorded after every block of 256 launches, the
thread waiting for the block before), each batch timed from before the first launch to the stream's
completion; printed: the median of BATCHES batches in µs per launch, one JSON line per mode and
argument count.

    python benchmarks/floor_reference/bare_layers.py LAYER [--count N] [--batches B] [--nodes K]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import cupy

BLOCK = 256
ELEMENTS = 1024
LAYERS = ("bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu")


def source(counts: list[int]) -> str:
    lines = []
    for n in counts:
        params = ", ".join(f"const float* a{i}" for i in range(n))
        lines.append(f'extern "C" __global__ void lb_floor_{n}({params}) {{}}')
    return "\n".join(lines) + "\n"


def timed(stream: cupy.cuda.Stream, count: int, per_mark: int, launch: Callable[[], object]) -> float:
    """Seconds per call of ``launch`` over ``count`` calls, to the stream's completion."""
    events = [cupy.cuda.Event(block=True, disable_timing=True) for _ in range(3)]
    marks = 0
    begin = time.perf_counter()
    done = 0
    while done < count:
        n = min(per_mark, count - done)
        for _ in range(n):
            launch()
        done += n
        if done < count:
            events[marks % 3].record(stream)
            if marks:
                events[(marks - 1) % 3].synchronize()
            marks += 1
    stream.synchronize()
    return (time.perf_counter() - begin) / count


def measure(
    stream: cupy.cuda.Stream, launch: Callable[[], object], per_call: int, opts: argparse.Namespace
) -> float:
    """The median over batches of µs per launch; a call holding ``per_call`` launches (a graph's nodes)."""
    calls = opts.count if per_call > 1 else opts.count * opts.nodes
    per_mark = max(1, BLOCK // per_call)
    with stream:
        timed(stream, calls, per_mark, launch)  # warm-up
        return 1e6 * statistics.median(
            timed(stream, calls, per_mark, launch) / per_call for _ in range(opts.batches)
        )


def capture(stream: cupy.cuda.Stream, launch: Callable[[], object], nodes: int) -> cupy.cuda.Graph:
    with stream:
        stream.begin_capture()
        for _ in range(nodes):
            launch()
        return stream.end_capture()


def emit(layer: str, mode: str, args: int | None, us: float) -> None:
    print(json.dumps({"layer": layer, "mode": mode, "args": args, "us_per_launch": round(us, 4)}), flush=True)


def bindings(stream: cupy.cuda.Stream, buffer: cupy.ndarray, opts: argparse.Namespace) -> None:
    from cuda.bindings import driver, nvrtc

    arch = cupy.cuda.Device().compute_capability
    err, prog = nvrtc.nvrtcCreateProgram(source(opts.args).encode(), b"floor.cu", 0, [], [])
    options = [f"--gpu-architecture=compute_{arch}".encode()]
    nvrtc.nvrtcCompileProgram(prog, 1, options)
    err, size = nvrtc.nvrtcGetPTXSize(prog)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(prog, ptx)
    image = ctypes.create_string_buffer(ptx)
    err, module = driver.cuModuleLoadData(ctypes.addressof(image))
    handle = driver.CUstream(stream.ptr)
    for n in opts.args:
        err, f = driver.cuModuleGetFunction(module, f"lb_floor_{n}".encode())
        params = ((buffer.data.ptr,) * n, (ctypes.c_void_p,) * n) if n else 0

        def launch(f=f, params=params):
            return driver.cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, handle, params, 0)

        emit("bindings", "eager", n, measure(stream, launch, 1, opts))
        driver.cuStreamBeginCapture(handle, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        for _ in range(opts.nodes):
            launch()
        err, graph = driver.cuStreamEndCapture(handle)
        err, exe = driver.cuGraphInstantiate(graph, 0)
        emit(
            "bindings",
            "graph",
            n,
            measure(stream, lambda exe=exe: driver.cuGraphLaunch(exe, handle), opts.nodes, opts),
        )


def cupy_raw_one(
    stream: cupy.cuda.Stream,
    kernel: Any,
    argv: tuple[Any, ...],
    n: int,
    keyword: bool,
    opts: argparse.Namespace,
) -> None:
    if keyword:
        emit(
            "cupy_raw_stream",
            "eager",
            n,
            measure(stream, lambda: kernel((1,), (1,), argv, stream=stream), 1, opts),
        )
        return
    emit("cupy_raw", "eager", n, measure(stream, lambda: kernel((1,), (1,), argv), 1, opts))
    graph = capture(stream, lambda: kernel((1,), (1,), argv), opts.nodes)
    emit("cupy_raw", "graph", n, measure(stream, lambda: graph.launch(stream), opts.nodes, opts))


def cupy_raw(stream: cupy.cuda.Stream, buffer: cupy.ndarray, opts: argparse.Namespace, keyword: bool) -> None:
    module = cupy.RawModule(code=source(opts.args))
    for n in opts.args:
        cupy_raw_one(stream, module.get_function(f"lb_floor_{n}"), (buffer,) * n, n, keyword, opts)


def cupy_call(stream: cupy.cuda.Stream, layer: str, opts: argparse.Namespace) -> None:
    with stream:
        x = cupy.ones(ELEMENTS, dtype=cupy.float32)
        y = cupy.zeros(ELEMENTS, dtype=cupy.float32)
    if layer == "cupy_elementwise":
        kernel = cupy.ElementwiseKernel("T x", "T y", "y = x", "lb_floor_copy")
        launch: Callable[[], object] = lambda: kernel(x, y)  # noqa: E731
    else:
        launch = lambda: cupy.multiply(x, x, out=y)  # noqa: E731
    emit(layer, "eager", None, measure(stream, launch, 1, opts))
    graph = capture(stream, launch, opts.nodes)
    emit(layer, "graph", None, measure(stream, lambda: graph.launch(stream), opts.nodes, opts))


def torch_layer(stream: cupy.cuda.Stream, opts: argparse.Namespace) -> None:
    import torch

    torch.cuda.set_stream(torch.cuda.ExternalStream(stream.ptr))
    a = torch.ones(ELEMENTS, device="cuda")
    b = torch.ones(ELEMENTS, device="cuda")
    emit("torch", "eager", None, measure(stream, lambda: a.mul_(b), 1, opts))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(opts.nodes):
            a.mul_(b)
    emit("torch", "graph", None, measure(stream, graph.replay, opts.nodes, opts))


def gpu_floor(stream: cupy.cuda.Stream, opts: argparse.Namespace) -> None:
    """The GPU's per-node floor: a graph of ``--gpu-nodes`` empty kernels replayed, GPU time per node."""
    kernel = cupy.RawModule(code=source([0])).get_function("lb_floor_0")
    graph = capture(stream, lambda: kernel((1,), (1,), ()), opts.gpu_nodes)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    replays = max(1, opts.count // opts.gpu_nodes)
    samples = []
    for _ in range(opts.batches + 1):
        start.record(stream)
        for _ in range(replays):
            graph.launch(stream)
        end.record(stream)
        end.synchronize()
        samples.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / (replays * opts.gpu_nodes))
    emit("gpu", "graph", None, statistics.median(samples[1:]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layer", choices=LAYERS)
    parser.add_argument("--count", type=int, default=10000, help="iterations per batch")
    parser.add_argument("--batches", type=int, default=9)
    parser.add_argument("--nodes", type=int, default=1, help="launches per iteration (a graph's nodes)")
    parser.add_argument("--gpu-nodes", type=int, default=100)
    parser.add_argument("--args", type=lambda text: [int(a) for a in text.split(",")], default=[0, 4, 16])
    opts = parser.parse_args()
    stream = cupy.cuda.Stream(non_blocking=True)
    buffer = cupy.zeros(1, dtype=cupy.float32)
    if opts.layer == "bindings":
        bindings(stream, buffer, opts)
    elif opts.layer in ("cupy_raw", "cupy_raw_stream"):
        cupy_raw(stream, buffer, opts, opts.layer == "cupy_raw_stream")
    elif opts.layer in ("cupy_elementwise", "cupy_ufunc"):
        cupy_call(stream, opts.layer, opts)
    elif opts.layer == "torch":
        torch_layer(stream, opts)
    else:
        gpu_floor(stream, opts)


if __name__ == "__main__":
    main()
