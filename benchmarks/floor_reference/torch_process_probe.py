"""The floor's torch layer in bare variants, each in a fresh process, importing nothing of launchbench:
does a torch graph replay cost more in a process that has run CuPy's layers first?

    python benchmarks/floor_reference/torch_process_probe.py VARIANT

VARIANT:
- ``plain``: bare_layers.py's torch loop as it is (eager batches, then the graph's);
- ``after_cupy``: the same, after bare_layers.py's cupy_raw, bindings and cupy_ufunc loops have run
  in this process (their output discarded), as a floor process runs them before torch;
- ``interleaved``: eager and graph batches alternating, as launchbench's sampler alternates modes;
- ``interleaved_latency``: the same with a launch-and-synchronize after each batch (the sampler's
  latency samples).
Prints one JSON line per mode (median µs per launch of 15 batches of at least 5 ms) and one with the
variant's seconds. benchmarks/floor_reference/torch_process_probe.sh alternates the variants with
``launchbench floor`` processes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import cupy

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bare_layers  # noqa: E402 - the references' own loops, beside this file

VARIANTS = ("plain", "after_cupy", "interleaved", "interleaved_latency")


def options(batches: int = 15) -> argparse.Namespace:
    return argparse.Namespace(
        count=1000, batches=batches, sample_time=0.005, nodes=1, stretch=0, gpu_nodes=100, args=[0, 4, 16]
    )


def torch_objects(stream: cupy.cuda.Stream) -> tuple[Any, Any, Any, Any]:
    """torch on CuPy's stream, two 1024-float tensors and a one-node graph of a.mul_(b)."""
    import torch

    torch.cuda.set_stream(torch.cuda.ExternalStream(stream.ptr))
    a = torch.ones(1024, device="cuda")
    b = torch.ones(1024, device="cuda")
    torch.Tensor.mul_(a, b)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.Tensor.mul_(a, b)
    return torch, a, b, graph


def interleaved(stream: cupy.cuda.Stream, opts: argparse.Namespace, latency: bool) -> tuple[float, float]:
    """Median µs per launch of eager and graph batches taken in alternation."""
    torch, a, b, graph = torch_objects(stream)
    per_mark = bare_layers.BLOCK
    eager_call, graph_call = (torch.Tensor.mul_, (a, b)), (graph.replay, ())
    with stream:
        eager_n = bare_layers.calibrated(stream, opts.count, per_mark, eager_call, opts.sample_time)
        graph_n = bare_layers.calibrated(stream, opts.count, per_mark, graph_call, opts.sample_time)
        eager, replay = [], []
        for _ in range(opts.batches):
            eager.append(1e6 * bare_layers.timed(stream, eager_n, per_mark, *eager_call))
            if latency:
                stream.synchronize()
                torch.Tensor.mul_(a, b)
                stream.synchronize()
            replay.append(1e6 * bare_layers.timed(stream, graph_n, per_mark, *graph_call))
            if latency:
                stream.synchronize()
                graph.replay()
                stream.synchronize()
    return statistics.median(eager), statistics.median(replay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", choices=VARIANTS)
    variant = parser.parse_args().variant
    opts = options()
    stream = cupy.cuda.Stream(non_blocking=True)
    buffer = cupy.zeros(1, dtype=cupy.float32)
    began = time.perf_counter()
    if variant == "after_cupy":
        with contextlib.redirect_stdout(io.StringIO()):
            bare_layers.cupy_raw(stream, buffer, options(40), False)
            bare_layers.bindings(stream, buffer, options(40))
            bare_layers.cupy_call(stream, "cupy_ufunc", options(40))
    if variant in ("plain", "after_cupy"):
        bare_layers.torch_layer(stream, opts)
    else:
        eager, replay = interleaved(stream, opts, variant == "interleaved_latency")
        for mode, value in (("eager", eager), ("graph", replay)):
            print(json.dumps({"layer": "torch", "mode": mode, "us_per_launch": round(value, 4)}))
    print(json.dumps({"variant": variant, "s": round(time.perf_counter() - began, 2)}))


if __name__ == "__main__":
    main()
