"""What a run's worker spends between passes, piece by piece, on a GPU machine: each piece of the CuPy
backend's start (the CUDA context, NVML, the streams, the canary, the graph warm-up), each piece of the
environment a worker reports, and the process's exit with its CUDA context held, in fresh processes.

    python benchmarks/worker_start_probe.py [--runs 3] [--json FILE]

Each run is a fresh interpreter (this file with --child) that times its pieces in order and prints them
as one JSON line; the parent times from that line to the child's exit (``exit_s``: the process's
teardown with the context held, which a run's next worker waits for).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def _timed(pieces: dict[str, float], name: str, work: Callable[[], Any]) -> Any:
    begin = time.perf_counter()
    value = work()
    pieces[name] = time.perf_counter() - begin
    return value


def child() -> None:
    """The pieces of one worker's start, in the order a worker goes through them."""
    pieces: dict[str, float] = {}
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    _timed(pieces, "import_launchbench_worker", lambda: __import__("launchbench.run.worker"))
    cupy = _timed(pieces, "import_cupy", lambda: __import__("cupy"))
    from launchbench.backend import cupy_backend as cb
    from launchbench.backend import gpu_probe
    from launchbench.backend.canary import ReferenceCanary
    from launchbench.backend.nvml import NvmlMonitor
    from launchbench.measure.clock import SystemClock
    from launchbench.results import environment as env

    _timed(pieces, "require_gpu", lambda: gpu_probe.require_gpu(0))
    device = cupy.cuda.Device(0)
    _timed(pieces, "device_use", device.use)
    stream = _timed(pieces, "first_stream_context", lambda: cupy.cuda.Stream(non_blocking=True))
    _timed(pieces, "nvml_monitor", lambda: NvmlMonitor.for_cuda_device(0))
    _timed(pieces, "pci_address", lambda: cb._pci_address(device))
    canary = _timed(pieces, "canary_init", lambda: ReferenceCanary(stream, SystemClock()))
    _timed(pieces, "canary_read", canary.read)
    _timed(pieces, "env_host_cpu", env.host_cpu)
    _timed(pieces, "env_git_commit", env.git_commit)
    _timed(pieces, "env_cupy_build", env.cupy_build)
    _timed(pieces, "env_cpu_governor", env.cpu_governor)
    _timed(pieces, "env_nccl_import", lambda: __import__("cupy.cuda.nccl"))
    _timed(pieces, "collect_environment", lambda: gpu_probe.collect_environment(0))
    _timed(pieces, "whole_backend_again", lambda: cb.CupyBackend(0, SystemClock()))
    print(json.dumps(pieces), flush=True)
    os._exit(0)


def one_run() -> dict[str, float]:
    """A fresh child's pieces, and its exit after it printed them (``exit_s``) and its whole life."""
    begin = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    printed = time.perf_counter()
    proc.wait()
    ended = time.perf_counter()
    pieces = json.loads(line) if line.strip() else {}
    return {**pieces, "exit_s": ended - printed, "life_s": ended - begin}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        child()
        return
    runs = [one_run() for _ in range(args.runs)]
    for name in runs[0]:
        print(f"{name:28s} " + " ".join(f"{run.get(name, float('nan')):8.4f}" for run in runs))
    if args.json is not None:
        args.json.write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
