"""Which of launchbench's graph-life-cycle steps slow later graph replays, each variant in a fresh process.

Every variant starts a new Python process that makes one stream, captures a bare 100-node graph of empty
kernels with plain CuPy (the reference graph G0), times G0's replays, performs the variant's steps and times
G0 (and, where the variant captures one, a bare graph G1 made after those steps) again. Times are the
median of 9 batches of 200 replays, in µs per node, after a warm-up batch. The parent process imports nothing
of CuPy or launchbench; each child imports launchbench's graph module only where its variant needs it.

    python benchmarks/replay_probe.py [--out results/fidelity-h200/probe/NAME.json] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import gc, json, sys, time
import cupy, numpy as np
variant = sys.argv[1]
stream = cupy.cuda.Stream(non_blocking=True)
kernel = cupy.RawKernel('extern "C" __global__ void probe_empty() {}', "probe_empty")
NODES = 100

def launches():
    for _ in range(NODES):
        kernel((1,), (1,), (), stream=stream)

def bare_graph():
    launches(); stream.synchronize()
    stream.begin_capture(); launches(); g = stream.end_capture()
    g.upload(stream); g.launch(stream); stream.synchronize()
    return g

def per_node(g):
    g.launch(stream); stream.synchronize()
    times = []
    for _ in range(9):
        stream.synchronize(); t0 = time.perf_counter()
        for _ in range(200):
            g.launch(stream)
        stream.synchronize(); times.append((time.perf_counter() - t0) / 200 / NODES)
    return float(np.median(times)) * 1e6

def eager_per_launch():
    times = []
    for _ in range(9):
        stream.synchronize(); t0 = time.perf_counter()
        for _ in range(2):
            launches()
        stream.synchronize(); times.append((time.perf_counter() - t0) / (2 * NODES))
    return float(np.median(times)) * 1e6

out = {"variant": variant}
g0 = bare_graph()
out["g0_before"] = per_node(g0)
calls = [lambda: kernel((1,), (1,), (), stream=stream) for _ in range(NODES)]
if variant != "baseline":
    from launchbench.backend import graph as lg
    from launchbench.measure.clock import SystemClock
    clock = SystemClock()
    if variant == "capture_alive":
        kept = lg.capture(stream, calls, clock)
        out["g0_captured_alive"] = per_node(g0)
        out["captured_graph"] = per_node(kept.graph)
        del kept; gc.collect()
        out["g0_after_free"] = per_node(g0)
    elif variant == "upload_pair_only":
        lg._upload_pair(stream, calls, clock)
        out["g0_after_pair"] = per_node(g0)
        g1 = bare_graph()
        out["g1_after_pair"] = per_node(g1)
        out["g0_with_g1"] = per_node(g0)
    elif variant in ("flag_only", "then_upload_only"):
        raw = lg.capture_raw(stream, calls)
        lg._time_instantiation(raw, stream, clock, with_flag=variant == "flag_only")
        lg.cudart.cudaGraphDestroy(raw)
        out["g0_after"] = per_node(g0)
        g1 = bare_graph()
        out["g1_after"] = per_node(g1)
        out["g0_with_g1"] = per_node(g0)
    elif variant == "pair_other_stream":
        other = cupy.cuda.Stream(non_blocking=True)
        lg._upload_pair(other, [lambda: kernel((1,), (1,), (), stream=other) for _ in range(NODES)], clock)
        g1 = bare_graph()
        out["g1_after"] = per_node(g1)
        out["g0_with_g1"] = per_node(g0)
    elif variant == "pair_after_then_free":
        g1 = bare_graph()
        out["g1_before_pair"] = per_node(g1)
        lg._upload_pair(stream, calls, clock)
        out["g1_after_pair"] = per_node(g1)
        out["g0_after_pair"] = per_node(g0)
        del g1; gc.collect()
        out["g0_after_free_g1"] = per_node(g0)
        g2 = bare_graph()
        out["g2_new"] = per_node(g2)
    elif variant.startswith("raw_"):
        # raw_<flag|plain>_<upload|noupload>_<launch|nolaunch>: one extra instantiation, then destroyed
        from cuda.bindings import runtime as rt
        _, how, upload, launch = variant.split("_")
        raw = lg.capture_raw(stream, calls)
        if how == "flag":
            params = rt.cudaGraphInstantiateParams()
            params.flags = int(rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload)
            params.uploadStream = stream.ptr
            err, exe = rt.cudaGraphInstantiateWithParams(raw, params)
        else:
            err, exe = rt.cudaGraphInstantiateWithFlags(raw, 0)
            if upload == "upload":
                rt.cudaGraphUpload(exe, stream.ptr)
        stream.synchronize()
        if launch == "launch":
            rt.cudaGraphLaunch(exe, stream.ptr)
            stream.synchronize()
        rt.cudaGraphExecDestroy(exe)
        rt.cudaGraphDestroy(raw)
        out["g0_after"] = per_node(g0)
        g1 = bare_graph()
        out["g1_after"] = per_node(g1)
    elif variant == "cupy_upload_nolaunch":
        stream.begin_capture(); launches(); g1 = stream.end_capture()
        g1.upload(stream); stream.synchronize()
        del g1
        out["g0_after"] = per_node(g0)
    elif variant == "execute_leak":
        from launchbench.backend.cupy_backend import CupyBackend
        from launchbench.run.execute import execute_case
        from launchbench.scenario.expand import expand_scenario
        backend = CupyBackend(0, clock)
        cases = [c for c in expand_scenario("scenarios/quickstart.yaml") if c.case_id == "empty/length=100"]
        import dataclasses
        case = dataclasses.replace(cases[0], measure=cases[0].measure.model_copy(update={"max_time": 0.5}))
        execute_case(backend, case, clock)
        live = lambda: sum(isinstance(o, cupy.cuda.Graph) for o in gc.get_objects())
        out["graphs_live_after_case"] = live()
        out["g0_after_case"] = per_node(g0)
        stream = backend.stream(0)
        g3 = bare_graph()
        out["g3_backend_stream_after_case"] = per_node(g3)
        gc.collect()
        out["graphs_live_after_gc"] = live()
        out["g3_after_gc"] = per_node(g3)
    elif variant.startswith("seq:"):
        # actions in order, G0 timed after each: cap<N> (launchbench's capture() of N empty kernels),
        # split<N> (the same without the upload pair), flag<N>/plainup<N> (a raw capture instantiated with
        # the upload flag / instantiated then uploaded, launched once, destroyed)
        from cuda.bindings import runtime as rt

        def chain(n):
            return [lambda: kernel((1,), (1,), (), stream=stream) for _ in range(n)]

        kept = []
        for action in variant[4:].split(","):
            name = action.rstrip("0123456789")
            n = int(action[len(name):])
            if name == "cap":
                kept.append(lg.capture(stream, chain(n), clock))
            elif name == "split":
                pair, lg._upload_pair = lg._upload_pair, lambda *a: (None, None)
                kept.append(lg.capture(stream, chain(n), clock))
                lg._upload_pair = pair
            else:
                raw = lg.capture_raw(stream, chain(n))
                if name == "flag":
                    params = rt.cudaGraphInstantiateParams()
                    params.flags = int(rt.cudaGraphInstantiateFlags.cudaGraphInstantiateFlagUpload)
                    params.uploadStream = stream.ptr
                    err, exe = rt.cudaGraphInstantiateWithParams(raw, params)
                else:
                    err, exe = rt.cudaGraphInstantiateWithFlags(raw, 0)
                    rt.cudaGraphUpload(exe, stream.ptr)
                stream.synchronize()
                rt.cudaGraphLaunch(exe, stream.ptr)
                stream.synchronize()
                rt.cudaGraphExecDestroy(exe)
                rt.cudaGraphDestroy(raw)
            out[f"g0_after_{len(out)}_{action}"] = per_node(g0)
    elif variant.startswith("act:"):
        # one host-side action, then G0 again (and G1, a graph of the action's kernel, where it has one)
        action = variant[4:]
        other = cupy.cuda.Stream(non_blocking=True)
        if action == "none":
            pass
        elif action.startswith("ev_"):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            if action == "ev_block":
                start = cupy.cuda.Event(block=True, disable_timing=True)
            start.record(stream)
            kernel((1,), (1,), (), stream=stream)
            if action == "ev_query":
                while cupy.cuda.runtime.eventQuery(start.ptr) != 0:
                    pass
            else:
                start.synchronize()
            if action == "ev_elapsed":
                end.record(stream)
                end.synchronize()
                cupy.cuda.get_elapsed_time(start, end)
        else:
            src = 'extern "C" __global__ void probe_second() {}'
            name = "probe_second"
            if action == "kernel_same_src":
                src, name = 'extern "C" __global__ void probe_empty() {}', "probe_empty"
            second = cupy.RawKernel(src, name)
            on = other if action.endswith("other_stream") else stream
            second((1,), (1,), (), stream=on)
            on.synchronize()
            if action.endswith("graph"):
                on.begin_capture()
                for _ in range(NODES):
                    second((1,), (1,), (), stream=on)
                g1 = on.end_capture()
                g1.upload(on)
                g1.launch(on)
                on.synchronize()
                out["g1_second_kernel"] = per_node(g1) if on is stream else None
        out["g0_after"] = per_node(g0)
    elif variant == "prepare_steps":
        # CupyPreparedCase's construction step by step, on a second stream as a backend's
        import dataclasses

        from launchbench.backend.step_builder import StepBuilder
        from launchbench.backend.workload import LaunchLoop
        from launchbench.scenario.expand import expand_scenario

        other = cupy.cuda.Stream(non_blocking=True)
        case = [c for c in expand_scenario("scenarios/quickstart.yaml") if c.case_id == "empty/length=100"][0]
        builder = StepBuilder(other)
        with other:
            steps = [builder.build(step, i) for i, step in enumerate(case.steps)]
        case_calls = [call for built in steps for call in built.calls]
        out["g0_after_build"] = per_node(g0)
        eager = LaunchLoop(case_calls, 100, other, clock, 512)
        out["g0_after_loop"] = per_node(g0)
        eager.run_batch(1)
        out["g0_after_eager_batch"] = per_node(g0)
        plain = [lambda: kernel((1,), (1,), (), stream=other) for _ in range(100)]
        kept = lg.capture(other, plain, clock)
        out["g0_after_capture_plain_other_stream"] = per_node(g0)
        kept2 = lg.capture(other, case_calls, clock)
        out["g0_after_capture_case_calls"] = per_node(g0)
        loop = LaunchLoop([kept2.launch_call(other)], 100, other, clock, 512)
        loop.run_batch(10)
        out["g0_after_graph_loop"] = per_node(g0)
    elif variant == "execute_steps":
        # the execute path step by step in one process: the slowdown stays once caused, so the first
        # step after which G0 reads slow is the one that caused it
        import dataclasses

        from launchbench.backend.cupy_backend import CupyBackend
        from launchbench.measure.sampler import Sampler
        from launchbench.scenario.expand import expand_scenario

        backend = CupyBackend(0, clock)
        out["g0_after_backend"] = per_node(g0)
        case = [c for c in expand_scenario("scenarios/quickstart.yaml") if c.case_id == "empty/length=100"][0]
        case = dataclasses.replace(case, measure=case.measure.model_copy(update={"max_time": 0.5}))
        prepared = backend.prepare(case)
        out["g0_after_prepare"] = per_node(g0)
        prepared.harness_cost()
        out["g0_after_harness"] = per_node(g0)
        session = Sampler(case.measure, clock, backend.monitor).start(prepared.workloads)
        out["g0_after_calibrate"] = per_node(g0)
        while not session.round():
            pass
        session.finish()
        out["g0_after_rounds"] = per_node(g0)
        prepared.check_outputs()
        out["g0_after_check"] = per_node(g0)
        prepared.close()
        out["g0_after_close"] = per_node(g0)
    elif variant == "split_only":
        orig = lg._upload_pair
        lg._upload_pair = lambda *a: (None, None)
        kept = lg.capture(stream, calls, clock)
        out["g0_captured_alive"] = per_node(g0)
        out["captured_graph"] = per_node(kept.graph)
out["eager_us"] = eager_per_launch()

def read(path):
    try:
        return open(path).read().strip()
    except OSError:
        return None

stat = read("/proc/thread-self/stat")
cpu = int(stat.rsplit(")", 1)[1].split()[36]) if stat else None
out["cpu"] = cpu
if cpu is not None:
    base = f"/sys/devices/system/cpu/cpu{cpu}"
    out["cpu_khz"] = read(f"{base}/cpufreq/scaling_cur_freq")
    out["governor"] = read(f"{base}/cpufreq/scaling_governor")
    import glob
    nodes = glob.glob(f"{base}/node*")
    out["cpu_node"] = nodes[0].rsplit("node", 1)[1] if nodes else None
    out["siblings"] = read(f"{base}/topology/thread_siblings_list")
bus = cupy.cuda.Device(0).pci_bus_id.lower()
out["gpu_node"] = read(f"/sys/bus/pci/devices/{bus}/numa_node")
out["affinity"] = len(__import__("os").sched_getaffinity(0))
print(json.dumps(out))
"""

VARIANTS = (
    "baseline",
    "capture_alive",
    "split_only",
    "upload_pair_only",
    "flag_only",
    "then_upload_only",
    "pair_other_stream",
    "pair_after_then_free",
    "execute_leak",
    "execute_steps",
    "cupy_upload_nolaunch",
    *(f"raw_flag_upload_{lch}" for lch in ("launch", "nolaunch")),
    *(f"raw_plain_{u}_{lch}" for u in ("upload", "noupload") for lch in ("launch", "nolaunch")),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), help="variants to run, in order")
    args = parser.parse_args()
    rows = []
    for _ in range(args.repeat):
        for variant in args.variants:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, variant], capture_output=True, text=True, timeout=120
            )
            line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            row = (
                json.loads(line)
                if line.startswith("{")
                else {"variant": variant, "error": done.stderr[-400:]}
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
