"""Bare loops of launchbench floor's Python layers, each the plainest code a user would write, importing
nothing of launchbench: the standalone references its layers are held to (benchmarks/floor_fidelity.py).

One process measures one layer (at every argument count and in both modes), or with LAYER ``python``
every Python layer but torch one after the other, as one `launchbench floor` process holds them (the
probe of whether a process's shape moves the host state it meets: floor_fidelity.py --together),
calling exactly what the
layer calls, with the same arguments (the same packing for cuda-bindings, the same 1024-float arrays,
the same non-blocking stream made by CuPy), the way launchbench's loop calls it (a call without
keywords as function(*args), a partial with keywords as it is): batches of at least COUNT calls,
as many more as make a batch last --sample-time (launchbench's sample_time, 5 ms), the queue
bounded as launchbench bounds it (an event recorded after every block of 256 launches, the thread
waiting for the block before), each batch timed from before the first launch to its end event's
completion (busy-polled); printed: the median of BATCHES batches in µs per launch, one JSON line per
mode and argument count, and with --stretch N the medians of consecutive stretches of N batches
(``stretches_us``: the host's state can move within a process, as launchbench's stretches show it).

    python benchmarks/floor_reference/bare_layers.py LAYER [--count N] [--batches B] [--sample-time S] [--nodes K] [--stretch N]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import statistics
import time
from collections.abc import Callable
from functools import partial

import cupy

BLOCK = 256
ELEMENTS = 1024
LAYERS = ("bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu")
TOGETHER = ("bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc")  # LAYER python


def source(counts: list[int]) -> str:
    lines = []
    for n in counts:
        params = ", ".join(f"const float* a{i}" for i in range(n))
        lines.append(f'extern "C" __global__ void lb_floor_{n}({params}) {{}}')
    return "\n".join(lines) + "\n"


def timed(
    stream: cupy.cuda.Stream, count: int, per_mark: int, function: Callable[..., object], args: tuple
) -> float:
    """Seconds per call of ``function(*args)`` over ``count`` calls, from before the first to the end
    event's completion (busy-polled): an event recorded after every block of ``per_mark`` calls, the
    thread waiting for the block before it, as launchbench's loop does."""
    events = [cupy.cuda.Event(block=True, disable_timing=True) for _ in range(3)]
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    outstanding: list[cupy.cuda.Event] = []
    marks = 0
    arg = args[0] if args else None
    start.record(stream)
    begin = time.perf_counter()
    done = 0
    while done < count:
        n = min(per_mark, count - done)
        if len(args) == 1:  # a graph replay, graph.launch(stream): called as launchbench calls it
            for _ in range(n):
                function(arg)
        else:
            for _ in range(n):
                function(*args)
        event = events[marks % 3]
        event.record(stream)
        outstanding.append(event)
        if len(outstanding) > 1:
            outstanding.pop(0).synchronize()
        marks += 1
        done += n
    end.record(stream)
    while cupy.cuda.runtime.eventQuery(end.ptr) != 0:
        pass
    return (time.perf_counter() - begin) / count


def calibrated(
    stream: cupy.cuda.Stream,
    calls: int,
    per_mark: int,
    call: tuple[Callable[..., object], tuple],
    sample_s: float,
) -> int:
    """The calls per batch that make a batch last at least ``sample_s`` (launchbench's sample_time),
    found as launchbench's sampler finds its iterations per sample: double, or extrapolate with 10%
    to spare, until a batch is long enough; ``calls`` as it is when ``sample_s`` is 0."""
    for _ in range(40):
        took = timed(stream, calls, per_mark, *call) * calls
        if took >= sample_s:
            return calls
        calls = max(calls * 2, math.ceil(calls * sample_s / took * 1.1)) if took > 0 else calls * 10
    return calls


def measure(
    stream: cupy.cuda.Stream,
    function: Callable[..., object],
    args: tuple,
    per_call: int,
    opts: argparse.Namespace,
) -> list[float]:
    """µs per launch of ``function(*args)`` in each of ``--batches`` batches, in time order; a call
    holding ``per_call`` launches (a graph's nodes). A batch lasts at least ``--sample-time``, as
    launchbench's samples do."""
    calls = opts.count if per_call > 1 else opts.count * opts.nodes
    per_mark = max(1, BLOCK // per_call)
    with stream:
        calls = calibrated(stream, calls, per_mark, (function, args), opts.sample_time)  # and the warm-up
        return [1e6 * timed(stream, calls, per_mark, function, args) / per_call for _ in range(opts.batches)]


def capture(
    stream: cupy.cuda.Stream, function: Callable[..., object], args: tuple, nodes: int
) -> cupy.cuda.Graph:
    with stream:
        stream.begin_capture()
        for _ in range(nodes):
            function(*args)
        return stream.end_capture()


STRETCH = [0]  # --stretch: batches per stretch median (0: none), set by main


def stretch_medians(values: list[float], size: int) -> list[float]:
    """The medians of consecutive stretches of ``size`` values (time order); a short last one joins the
    one before it; none for ``size`` 0."""
    if size <= 0 or len(values) < size:
        return []
    count = len(values) // size
    return [
        statistics.median(values[i * size : (i + 1) * size if i < count - 1 else None]) for i in range(count)
    ]


def emit(layer: str, mode: str, args: int | None, values: list[float]) -> None:
    """One JSON line: the median of the batches, and with --stretch the medians of its stretches."""
    line: dict[str, object] = {"layer": layer, "mode": mode, "args": args}
    line["us_per_launch"] = round(statistics.median(values), 4)
    stretches = stretch_medians(values, STRETCH[0])
    if stretches:
        line["stretches_us"] = [round(v, 4) for v in stretches]
    print(json.dumps(line), flush=True)


def bindings(stream: cupy.cuda.Stream, buffer: cupy.ndarray, opts: argparse.Namespace) -> None:
    """cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, (values, ctypes types), 0) and
    cuGraphLaunch(exec, stream), called as launchbench's bindings layer calls them."""
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
        params = ((int(buffer.data.ptr),) * n, (ctypes.c_void_p,) * n) if n else 0
        launch = (f, 1, 1, 1, 1, 1, 1, 0, handle, params, 0)
        driver.cuLaunchKernel(*launch)
        emit("bindings", "eager", n, measure(stream, driver.cuLaunchKernel, launch, 1, opts))
        driver.cuStreamBeginCapture(handle, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        for _ in range(opts.nodes):
            driver.cuLaunchKernel(*launch)
        err, graph = driver.cuStreamEndCapture(handle)
        err, exe = driver.cuGraphInstantiate(graph, 0)
        emit("bindings", "graph", n, measure(stream, driver.cuGraphLaunch, (exe, handle), opts.nodes, opts))


def eager_and_graph(
    stream: cupy.cuda.Stream,
    layer: str,
    n: int | None,
    call: tuple[Callable[..., object], tuple],
    opts: argparse.Namespace,
) -> None:
    """``function(*args)`` eagerly, then captured ``--nodes`` times and replayed with Graph.launch(stream)."""
    function, args = call
    with stream:
        function(*args)
    emit(layer, "eager", n, measure(stream, function, args, 1, opts))
    graph = capture(stream, function, args, opts.nodes)
    emit(layer, "graph", n, measure(stream, graph.launch, (stream,), opts.nodes, opts))


def cupy_raw(stream: cupy.cuda.Stream, buffer: cupy.ndarray, opts: argparse.Namespace, keyword: bool) -> None:
    """kernel((1,), (1,), args) on the current stream, or a partial of it with ``stream=`` (the
    cupy_raw_stream layer, which has no graph of its own)."""
    module = cupy.RawModule(code=source(opts.args))
    for n in opts.args:
        kernel = module.get_function(f"lb_floor_{n}")
        argv = (buffer,) * n
        if keyword:
            with stream:
                launch = partial(kernel, (1,), (1,), argv, stream=stream)
                launch()
            emit("cupy_raw_stream", "eager", n, measure(stream, launch, (), 1, opts))
        else:
            eager_and_graph(stream, "cupy_raw", n, (kernel, ((1,), (1,), argv)), opts)


def cupy_call(stream: cupy.cuda.Stream, layer: str, opts: argparse.Namespace) -> None:
    """An ElementwiseKernel copying 1024 floats, called kernel(x, y); or cupy.multiply(x, x, out=y)
    through a partial (launchbench calls a partial with keywords as it is)."""
    with stream:
        x = cupy.ones(ELEMENTS, dtype=cupy.float32)
        y = cupy.zeros(ELEMENTS, dtype=cupy.float32)
    if layer == "cupy_elementwise":
        kernel = cupy.ElementwiseKernel("T x", "T y", "y = x", "lb_floor_copy")
        eager_and_graph(stream, layer, None, (kernel, (x, y)), opts)
    else:
        eager_and_graph(stream, layer, None, (partial(cupy.multiply, x, x, out=y), ()), opts)


def torch_layer(stream: cupy.cuda.Stream, opts: argparse.Namespace) -> None:
    """torch.Tensor.mul_(a, b) on CuPy's stream (torch.cuda.ExternalStream), and CUDAGraph.replay()."""
    import torch

    torch.cuda.set_stream(torch.cuda.ExternalStream(stream.ptr))
    a = torch.ones(ELEMENTS, device="cuda")
    b = torch.ones(ELEMENTS, device="cuda")
    torch.Tensor.mul_(a, b)
    emit("torch", "eager", None, measure(stream, torch.Tensor.mul_, (a, b), 1, opts))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(opts.nodes):
            torch.Tensor.mul_(a, b)
    emit("torch", "graph", None, measure(stream, graph.replay, (), opts.nodes, opts))


def gpu_floor(stream: cupy.cuda.Stream, opts: argparse.Namespace) -> None:
    """The GPU's per-node floor: a graph of ``--gpu-nodes`` empty kernels replayed, GPU time per node."""
    kernel = cupy.RawModule(code=source([0])).get_function("lb_floor_0")
    graph = capture(stream, kernel, ((1,), (1,), ()), opts.gpu_nodes)
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
    emit("gpu", "graph", None, samples[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("layer", choices=(*LAYERS, "python"))
    parser.add_argument("--count", type=int, default=1000, help="iterations per batch (launchbench: ~1000)")
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument(
        "--sample-time", type=float, default=0.005, help="seconds a batch lasts at least (launchbench's)"
    )
    parser.add_argument("--nodes", type=int, default=1, help="launches per iteration (a graph's nodes)")
    parser.add_argument(
        "--stretch", type=int, default=0, help="also print the medians of stretches of this many batches"
    )
    parser.add_argument("--gpu-nodes", type=int, default=100)
    parser.add_argument("--args", type=lambda text: [int(a) for a in text.split(",")], default=[0, 4, 16])
    opts = parser.parse_args()
    STRETCH[0] = opts.stretch
    stream = cupy.cuda.Stream(non_blocking=True)
    buffer = cupy.zeros(1, dtype=cupy.float32)
    for layer in TOGETHER if opts.layer == "python" else (opts.layer,):
        run_layer(layer, stream, buffer, opts)


def run_layer(layer: str, stream: cupy.cuda.Stream, buffer: cupy.ndarray, opts: argparse.Namespace) -> None:
    """One layer's loops, every argument count and mode, each printed as it ends."""
    if layer == "bindings":
        bindings(stream, buffer, opts)
    elif layer in ("cupy_raw", "cupy_raw_stream"):
        cupy_raw(stream, buffer, opts, layer == "cupy_raw_stream")
    elif layer in ("cupy_elementwise", "cupy_ufunc"):
        cupy_call(stream, layer, opts)
    elif layer == "torch":
        torch_layer(stream, opts)
    else:
        gpu_floor(stream, opts)


if __name__ == "__main__":
    main()
