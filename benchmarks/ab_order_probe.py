"""Does taking turns sample by sample narrow the B/A ratio of two processes' eager launch cost, against
one process measuring all its samples before the other? (results/ab-h200/order-probe/probe.json)

    python benchmarks/ab_order_probe.py OUT.json     # on a machine with an NVIDIA GPU, ~2 minutes

Two worker processes pinned to one CPU, fresh for every pair; each times 40 samples of 500 in-place
``cp.multiply`` launches on 1,000 floats. B is the same code (base) or adds host work per launch (pr:
a NumPy scalar per launch; pr2: that and ``np.broadcast_shapes``). 8 pairs per order and variant.
"""

import json
import math
import multiprocessing as mp
import os
import statistics
import sys
import time
import timeit


def worker(conn, cpu, extra):
    os.sched_setaffinity(0, {cpu})
    import cupy as cp
    import numpy as np

    x = cp.ones(1000, dtype=cp.float32)
    s = cp.cuda.Stream(non_blocking=True)
    FACTOR = 1.0

    def launch_base():
        cp.multiply(x, FACTOR, out=x)

    def launch_pr():
        alpha = np.asarray(FACTOR, dtype=x.dtype)[()]
        cp.multiply(x, alpha, out=x)

    def launch_pr2():
        alpha = np.asarray(FACTOR, dtype=x.dtype)[()]
        np.broadcast_shapes(x.shape, np.shape(alpha))
        cp.multiply(x, alpha, out=x)

    f = {"base": launch_base, "pr": launch_pr, "pr2": launch_pr2}[extra]
    with s:
        for _ in range(2000):
            f()
        s.synchronize()
        while True:
            msg = conn.recv()
            if msg is None:
                return
            n = msg
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            s.synchronize()
            conn.send((time.perf_counter() - t0) / n)


def one_pass(cpu, a_kind, b_kind, lockstep, rounds=40, n=500):
    ctx = mp.get_context("spawn")
    ps, conns = [], []
    for kind in (a_kind, b_kind):
        p_conn, c_conn = ctx.Pipe()
        p = ctx.Process(target=worker, args=(c_conn, cpu, kind))
        p.start()
        ps.append(p)
        conns.append(p_conn)
    samples = ([], [])

    def take(side):
        conns[side].send(n)
        samples[side].append(conns[side].recv())

    if lockstep:
        for r in range(rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for side in order:
                take(side)
    else:
        for side in (0, 1):
            for _ in range(rounds):
                take(side)
    for c in conns:
        c.send(None)
    for p in ps:
        p.join()
    a, b = statistics.median(samples[0]), statistics.median(samples[1])
    return {"a": a, "b": b, "log_ratio": math.log(b / a), "a_samples": samples[0], "b_samples": samples[1]}


if __name__ == "__main__":
    import numpy as np

    out = sys.argv[1]
    cpu = max(os.sched_getaffinity(0))
    x = np.ones(1000, dtype=np.float32)
    costs = {}
    costs["np.asarray(1.0,dtype)[()]"] = (
        min(timeit.repeat(lambda: np.asarray(1.0, dtype=x.dtype)[()], number=100000, repeat=5)) / 1e5
    )
    costs["np.broadcast_shapes"] = (
        min(timeit.repeat(lambda: np.broadcast_shapes(x.shape, ()), number=100000, repeat=5)) / 1e5
    )
    res = {"costs_ns": {k: v * 1e9 for k, v in costs.items()}, "runs": []}
    for lockstep in (True, False):
        for b_kind in ("base", "pr", "pr2"):
            for p in range(8):
                r = one_pass(cpu, "base", b_kind, lockstep)
                r.update(lockstep=lockstep, b_kind=b_kind, pass_index=p, a_med=r["a"], b_med=r["b"])
                res["runs"].append(r)
                print(
                    lockstep,
                    b_kind,
                    p,
                    f"A {r['a_med'] * 1e6:.2f} us  B {r['b_med'] * 1e6:.2f} us  ratio {math.exp(r['log_ratio']):.3f}",
                    flush=True,
                )
    with open(out, "w") as file:
        json.dump(res, file)
    for lockstep in (True, False):
        for b_kind in ("base", "pr", "pr2"):
            lr = [r["log_ratio"] for r in res["runs"] if r["lockstep"] == lockstep and r["b_kind"] == b_kind]
            print(
                f"lockstep={lockstep} B={b_kind}: mean ratio {math.exp(statistics.mean(lr)):.4f} sd(log) {statistics.stdev(lr):.4f}"
            )
    print(res["costs_ns"])
