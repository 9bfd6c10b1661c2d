"""What in a process's surroundings moves the one-launch rows (a one-node graph of an empty kernel
replayed, one eager empty kernel): each condition in fresh processes of plain CuPy that import nothing of
launchbench, the conditions taking turns ROUNDS times.

Conditions, each a way launchbench's worker differs from benchmarks/bare_loop.py:
- ``plain``: bare_loop.py's way: eager sampled, then the graph;
- ``interleaved``: eager and graph batches taking turns (launchbench's sampler interleaves its modes);
- ``canary_first``: a 100-node graph replayed and 100 eager launches first (launchbench's canary);
- ``spinner``: another process busy on another CPU throughout (launchbench's parent and the next pass's
  worker starting while a pass samples);
- ``forkserver``: the measuring process forked from a multiprocessing fork server that imported CuPy
  (launchbench's workers);
- ``nvml``: NVML initialised in the measuring process and the SM clock read after every batch
  (launchbench's clock monitor);
- ``second_context``: another process holding a CUDA context on the same GPU, idle, throughout
  (launchbench's next worker, started ahead and waiting for its pass).

Each timing: batches of at least 5 ms between synchronizes (one every 256 launches), 9 of them after a
0.1 s warm-up; µs per launch, their median. Prints one line per process, and with --out writes JSON.

    python benchmarks/host_state_probe.py [--rounds 4] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import subprocess
import sys
import time
from pathlib import Path

CONDITIONS = ("plain", "interleaved", "canary_first", "spinner", "forkserver", "nvml", "second_context")
NEIGHBOURS = {
    "spinner": "while True: pass",
    "second_context": "import time, cupy; cupy.zeros(1); cupy.cuda.Device().synchronize(); time.sleep(600)",
}


def measure(condition: str) -> dict[str, object]:
    """The one-launch rows measured in this process under ``condition`` (imports CuPy here)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    kernel = cupy.RawKernel('extern "C" __global__ void probe_empty() {}', "probe_empty")

    def capture(nodes: int) -> cupy.cuda.Graph:
        stream.begin_capture()
        for _ in range(nodes):
            kernel((1,), (1,), (), stream=stream)
        graph = stream.end_capture()
        graph.upload(stream)
        return graph

    with stream:
        kernel((1,), (1,), (), stream=stream)
        stream.synchronize()
        one = capture(1)
        launches = {
            "eager": lambda: kernel((1,), (1,), (), stream=stream),
            "graph": lambda: one.launch(stream),
        }

        def batch(mode: str, iters: int) -> float:
            launch = launches[mode]
            stream.synchronize()
            start = time.perf_counter()
            for i in range(iters):
                launch()
                if (i + 1) % 256 == 0:
                    stream.synchronize()
            stream.synchronize()
            return (time.perf_counter() - start) / iters

        if condition == "canary_first":
            hundred = capture(100)
            for _ in range(50):
                hundred.launch(stream)
            for _ in range(100):
                launches["eager"]()
            stream.synchronize()
        iters = {}
        for mode in launches:  # warm-up and iterations per batch
            n, begin = 256, time.perf_counter()
            while True:
                if batch(mode, n) * n < 0.005:
                    n *= 2
                elif time.perf_counter() - begin >= 0.1:
                    break
            iters[mode] = n
        samples: dict[str, list[float]] = {mode: [] for mode in launches}
        if condition == "nvml":
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            plain_batch = batch

            def batch(mode: str, iters: int) -> float:  # type: ignore[no-redef]
                took = plain_batch(mode, iters)
                pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
                return took

        if condition == "interleaved":
            for _ in range(9):
                for mode in launches:
                    samples[mode].append(batch(mode, iters[mode]))
        else:
            for mode in launches:
                samples[mode] = [batch(mode, iters[mode]) for _ in range(9)]
    from bare_loop import thread_cpu  # the reference's own reading of the CPU (this folder is on the path)

    medians = {mode: statistics.median(v) * 1e6 for mode, v in samples.items()}
    return {"condition": condition, "us_per_launch": medians, "cpu": thread_cpu()}


def neighbour(condition: str) -> subprocess.Popen[bytes] | None:
    """The process beside the measuring one for ``condition`` (None for most), running until killed; for
    a second CUDA context, once its context is made."""
    if condition not in NEIGHBOURS:
        return None
    busy = subprocess.Popen([sys.executable, "-c", NEIGHBOURS[condition]])
    time.sleep(3 if condition == "second_context" else 0.2)
    return busy


def fresh(condition: str) -> dict[str, object]:
    """``condition`` measured in a fresh interpreter (with its neighbour process beside it, if any)."""
    busy = neighbour(condition)
    try:
        code = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import json, host_state_probe as p; "
        code += f"print(json.dumps(p.measure({condition!r})))"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["cupy"])
    rows = []
    with context.Pool(1, maxtasksperchild=1) as pool:
        for rnd in range(args.rounds):
            order = CONDITIONS if rnd % 2 == 0 else CONDITIONS[::-1]
            for condition in order:
                row = pool.apply(measure, (condition,)) if condition == "forkserver" else fresh(condition)
                rows.append({**row, "round": rnd})
                values = "  ".join(f"{m} {v:.3f}" for m, v in row["us_per_launch"].items())  # type: ignore[union-attr]
                print(f"round {rnd} {condition:13} CPU {row['cpu']:>2}: {values} µs per launch", flush=True)
    for condition in CONDITIONS:
        for mode in ("graph", "eager"):
            values = sorted(r["us_per_launch"][mode] for r in rows if r["condition"] == condition)
            print(
                f"{condition:13} {mode}: median {statistics.median(values):.3f}, {values[0]:.3f}–{values[-1]:.3f} µs"
            )
    if args.out:
        args.out.write_text(json.dumps({"rounds": args.rounds, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
