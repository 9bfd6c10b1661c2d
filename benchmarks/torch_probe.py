"""Which step of the torch_graph life cycle (or of the graph mode of a torch chain) leaves a process in
the state where every later graph replay is slower.

The reference is a bare 100-node CuPy graph of empty kernels on the case's stream, replayed back to back
(µs per node, the median of 7 batches of 20 replays), as the worker's canary reads it. Each variant runs
in a fresh process (the state is sticky: once a step leaves it, every later reading shows it), reads the
reference when it starts and after every step, and prints one JSON line per reading; the parent prints
one table of them all, each reading against its process's first one (a mark where it is 3% or more
slower). A process imports only what it tests: torch, CuPy, the decode workloads and
launchbench.backend.torch_graph / graph.py (the sequence variants: the backend and execute_case, as a
worker runs a case).

    python benchmarks/torch_probe.py [--out FILE.json]            # every variant, one table
    python benchmarks/torch_probe.py --variant torch_graph --batch 256   # one variant, JSON lines

Variants: torch_graph (the product's life cycle, step by step), torch_graph_side (its warm-up on a new
side stream instead of the captured one), uploaded_unlaunched (a control: an exec uploaded and reset
without a launch, the known trigger), cupy_graph (graph.py's capture of the torch chain), natural (the
allocating decode_step_natural in torch_graph: its private pool released), sequence (execute_case over
every decode batch size in one process, then 256 and 1 again: size or being last?), reverse (256 first).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for entry in (ROOT, ROOT / "scenarios"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

NODES, REPLAYS, BATCHES = 100, 20, 7
EMPTY = 'extern "C" __global__ void probe_empty() {}'
MOVED = 1.03  # a reading this much above its process's first one is marked
REPLAYS_TIMED = 500
SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256]
RUNS = [  # in the order they run, the most telling first (--budget may leave the last ones out)
    ("torch_graph", 256),
    ("sequence", 0),
    ("uploaded_unlaunched", 1),
    ("torch_graph_side", 256),
    ("cupy_graph", 256),
    ("torch_graph", 1),
    ("natural", 256),
    ("reverse", 0),
]
CHILD_TIMEOUT_S = 45.0


class Reference:
    """The bare 100-node graph of empty kernels on ``stream``, captured once."""

    def __init__(self, cupy: Any, stream: Any):
        self.stream = stream
        self.kernel = cupy.RawKernel(EMPTY, "probe_empty")
        with stream:
            self._launches()
            stream.synchronize()
            stream.begin_capture()
            self._launches()
            self.graph = stream.end_capture()
        self.graph.upload(stream)
        self.graph.launch(stream)
        stream.synchronize()

    def _launches(self) -> None:
        for _ in range(NODES):
            self.kernel((1,), (1,), ())

    def read(self) -> float:
        graph, stream = self.graph, self.stream
        times = []
        for index in range(BATCHES + 1):
            start = time.perf_counter()
            for _ in range(REPLAYS):
                graph.launch(stream)
            stream.synchronize()
            if index:  # the first batch warms
                times.append((time.perf_counter() - start) / (REPLAYS * NODES))
        return statistics.median(times) * 1e6


class Probe:
    """One process's readings, each printed as a JSON line when it is taken."""

    def __init__(self, variant: str, batch: int, reference: Reference):
        self.variant, self.batch, self.reference = variant, batch, reference

    def __call__(self, step: str) -> None:
        self.reference.stream.synchronize()
        reading = {"variant": self.variant, "batch": self.batch, "step": step}
        reading["us_per_node"] = round(self.reference.read(), 4)
        print(json.dumps(reading), flush=True)


def _decode(torch: Any, cupy: Any, stream: Any, batch: int, natural: bool = False) -> tuple[Any, Any]:
    """The decode workload built as the torch step's builder builds it: torch's current stream is the
    case's stream; (that stream as a torch stream, run)."""
    import workloads.decode_torch as workloads

    device = torch.device("cuda", cupy.cuda.Device().id)
    main = torch.cuda.ExternalStream(stream.ptr, device=device)
    torch.cuda.set_stream(main)
    function = workloads.decode_step_natural if natural else workloads.decode_step
    with stream, torch.cuda.stream(main):
        work = function(torch, device, main, batch)
    stream.synchronize()
    return main, work["run"]


def _eager(run: Callable[[], Any], stream: Any, probe: Probe) -> None:
    for _ in range(20):
        run()
    stream.synchronize()
    probe("eager x20 on the case stream")


def _side_warm_up(torch: Any, main: Any, calls: list[Callable[[], Any]]) -> None:
    """Three warm-up iterations on a new side stream that waits for the case's (torch's recipe)."""
    side = torch.cuda.Stream()
    side.wait_stream(main)
    with torch.cuda.stream(side):
        for _ in range(3):
            for call in calls:
                call()
    main.wait_stream(side)
    main.synchronize()


def torch_life(torch: Any, cupy: Any, stream: Any, probe: Probe, variant: str) -> None:
    """torch_graph's life cycle through backend/torch_graph.py's own steps, a reading after each."""
    from launchbench.backend import torch_graph as tg

    main, run = _decode(torch, cupy, stream, probe.batch, natural=variant == "natural")
    probe("decode workload built")
    _eager(run, stream, probe)
    with stream:
        if variant == "torch_graph_side":
            _side_warm_up(torch, main, [run])
            probe("warm-up x3 on a new side stream")
        else:
            tg.warm_up(torch, main, [run])
            probe("warm-up x3 on the case stream (tg.warm_up)")
        graph, _kept = tg.new_graph(torch)
        pool = torch.cuda.graph_pool_handle()
        tg.capture_graph(torch, graph, pool, stream, [run])
    probe("capture_begin .. capture_end (tg.capture_graph)")
    tg.instantiate(graph)
    probe("instantiate (tg.instantiate)")
    probe(f"upload {'ok' if tg.upload(graph, stream) else 'not available'} (tg.upload)")
    if variant == "uploaded_unlaunched":
        graph.reset()
        probe("reset, the uploaded exec never launched (control)")
        return
    tg.first_replay(torch, graph, main)
    probe("first replay (tg.first_replay)")
    with torch.cuda.stream(main):
        for _ in range(REPLAYS_TIMED):
            graph.replay()
    main.synchronize()
    probe(f"{REPLAYS_TIMED} replays")
    tg.release(torch, graph, stream)
    probe("release: reset + empty_cache (tg.release)")
    del run, graph
    gc.collect()
    torch.cuda.set_stream(torch.cuda.default_stream())
    torch.cuda.empty_cache()
    probe("tensors freed, default stream current, empty_cache")


def cupy_graph_life(torch: Any, cupy: Any, stream: Any, probe: Probe) -> None:
    """The graph mode of the torch chain: graph.py's capture (its life cycle timed as a case does)."""
    from launchbench.backend.graph import capture
    from launchbench.measure.clock import SystemClock

    _main, run = _decode(torch, cupy, stream, probe.batch)
    probe("decode workload built")
    _eager(run, stream, probe)
    with stream:
        captured = capture(stream, [run], SystemClock())
    probe("graph.py capture (split life cycle, upload pair, CuPy capture)")
    for _ in range(REPLAYS_TIMED):
        captured.graph.launch(stream)
    stream.synchronize()
    probe(f"{REPLAYS_TIMED} replays")
    del captured
    gc.collect()
    probe("graph freed")


def cases_in_order(cupy: Any, variant: str, sizes: list[int]) -> None:
    """execute_case over the decode chain's cases, in ``sizes`` order, on one backend (as one worker
    runs them), the reference on the backend's stream 0 (the stream the worker's canary reads)."""
    from launchbench.backend.cupy_backend import CupyBackend
    from launchbench.measure.clock import SystemClock
    from launchbench.run.execute import execute_case
    from launchbench.scenario.expand import expand_scenario

    backend: Any = CupyBackend(0, SystemClock())
    probe = Probe(variant, 0, Reference(cupy, backend.stream(0)))
    probe("start: the backend and the reference")
    scenario = ROOT / "scenarios" / "decode_torch.yaml"
    decode = {c.params["batch"]: c for c in expand_scenario(scenario) if c.chain == "decode"}
    update = {"max_time": 0.3, "passes": 1, "min_samples": 3, "warmup_time": 0.02}
    for batch in sizes:
        case = decode[batch]
        case = dataclasses.replace(case, measure=case.measure.model_copy(update=update))
        result = execute_case(backend, case, backend.clock)
        statuses = ",".join(f"{m}={r.status}" for m, r in result.modes.items())
        canary = backend.canary().graph_s_per_node * 1e6
        probe(f"case batch={batch} ({statuses}; worker canary {canary:.3f})")


def child(variant: str, batch: int) -> None:
    """One variant in this (fresh) process, a JSON line per reading."""
    if variant not in {name for name, _batch in RUNS}:
        raise SystemExit(f"torch_probe: unknown variant {variant!r} (one of {', '.join(dict(RUNS))})")
    import cupy
    import torch

    if variant in ("sequence", "reverse"):
        order = [*SIZES, 256, 1] if variant == "sequence" else [256, 1, 256]
        cases_in_order(cupy, variant, order)
        return
    stream = cupy.cuda.Stream(non_blocking=True)
    probe = Probe(variant, batch, Reference(cupy, stream))
    probe("start: the reference alone")
    if variant == "cupy_graph":
        cupy_graph_life(torch, cupy, stream, probe)
    else:
        torch_life(torch, cupy, stream, probe, variant)


def _run_child(variant: str, batch: int, timeout: float = CHILD_TIMEOUT_S) -> list[dict[str, Any]]:
    """The variant in a fresh process: its readings, and a last row saying how it ended."""
    command = [sys.executable, __file__, "--variant", variant, "--batch", str(batch)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        out, status = done.stdout, f"exit {done.returncode}"
        tail = done.stderr.strip().splitlines()[-1:] if done.returncode else []
        if done.returncode:  # the whole of it in the log, the last line in the table
            print(f"probe: {variant} batch={batch} stderr:\n{done.stderr}", file=sys.stderr, flush=True)
    except subprocess.TimeoutExpired as err:
        out = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        status, tail = f"timed out after {timeout:.0f} s", []
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    end = {"variant": variant, "batch": batch, "step": f"process: {status} {' '.join(tail)}".strip()}
    return [*rows, {**end, "us_per_node": None}]


def _table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'variant':<20} {'batch':>5}  {'µs/node':>8}  {'vs start':>8}  step"]
    first: dict[tuple[str, int], float] = {}
    for row in rows:
        key = (row["variant"], row["batch"])
        value = row["us_per_node"]
        if value is None:
            lines.append(f"{key[0]:<20} {key[1]:>5}  {'':>8}  {'':>8}  {row['step']}")
            continue
        start = first.setdefault(key, value)
        mark = "  <-- moved" if value >= MOVED * start else ""
        lines.append(
            f"{key[0]:<20} {key[1]:>5}  {value:8.3f}  {value / start - 1:+8.1%}  {row['step']}{mark}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", help="run one variant in this process (JSON lines)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--out", type=Path, help="write every reading here as JSON")
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for all variants together")
    args = parser.parse_args()
    if args.variant:
        child(args.variant, args.batch)
        return
    rows: list[dict[str, Any]] = []
    deadline = time.perf_counter() + args.budget
    for variant, batch in RUNS:
        left = deadline - time.perf_counter()
        if left < 10:
            rows.append(
                {"variant": variant, "batch": batch, "step": "skipped: --budget spent", "us_per_node": None}
            )
            continue
        started = time.perf_counter()
        done = _run_child(variant, batch, min(CHILD_TIMEOUT_S, left))
        rows += done
        print(
            f"probe: {variant} batch={batch}: {done[-1]['step']} in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        if args.out is not None:  # every reading so far, should anything stop the parent
            args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    print(_table(rows))
    ended = [row["step"] for row in rows if row["step"].startswith("process:")]
    if any(not step.startswith("process: exit 0") for step in ended):
        raise SystemExit(1)  # a variant failed or timed out: its row says how


if __name__ == "__main__":
    main()
