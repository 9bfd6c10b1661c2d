"""Your own code in a launchbench chain: a template to copy (used by scenarios/own_code.yaml).

A scenario step ``{kind: python, callable: "workloads.own_code:particles", args: {n: 100000}, launches: 4}``
imports this module (from sys.path, or beside the scenario file) and calls ``particles(xp=cupy,
stream=<the step's stream>, n=100000)`` once, before anything is measured or captured. The rules:

1. Allocate every buffer here, in the function: a CUDA Graph freezes addresses, so the run below must
   never allocate an array that outlives it, nor rebind one (``pos = pos + vel`` would; ``out=`` is safe).
2. Return ``run``: a zero-argument callable that launches ONE iteration of your work on the current
   stream (launchbench makes the step's stream current). No synchronize, no host copies through
   ``.get()``/``.set()``/``cupy.asnumpy`` inside it: they break a capture. Declare in the scenario how
   many launches one call issues (``launches:``) so the per-launch numbers mean something.
3. Optionally return ``outputs`` (name → array): launchbench runs one iteration eagerly and one from
   the graph, from the same starting contents, and compares these arrays. And ``reset``, a callable
   restoring the starting contents; without it launchbench snapshots the outputs now and restores them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def particles(
    xp: Any, stream: Any, n: int = 100_000, dt: float = 0.01, stiffness: float = 4.0
) -> dict[str, Any]:
    """Particles on springs: one explicit Euler step, 4 in-place launches."""
    rng = np.random.default_rng(0)
    # 1. allocate (and fill) everything up front, on the device
    pos = xp.asarray(rng.standard_normal((n, 3)).astype(np.float32))
    vel = xp.zeros((n, 3), dtype=np.float32)
    scratch = xp.empty_like(pos)
    k_dt, dt32 = np.float32(-stiffness * dt), np.float32(dt)

    # 2. one iteration: every op writes into a buffer allocated above
    def run() -> None:
        xp.multiply(pos, k_dt, out=scratch)  # dv = −k·x·dt
        xp.add(vel, scratch, out=vel)  # v += dv
        xp.multiply(vel, dt32, out=scratch)  # dx = v·dt
        xp.add(pos, scratch, out=pos)  # x += dx

    # 3. what to compare eager against graph (launchbench restores both between the two runs)
    return {"run": run, "outputs": {"pos": pos, "vel": vel}}
