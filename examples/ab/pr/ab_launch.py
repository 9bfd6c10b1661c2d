"""The changed side of the ab example (scenarios/ab_launch.yaml): the same kernels as the base, but
every launch first checks that the in-place multiply keeps the array's dtype (``np.result_type``):
host work a pull request could add without touching the GPU work, so the graph replays the same
kernels while every eager launch pays for the check."""

from __future__ import annotations

from typing import Any

import numpy as np

FACTOR = 1.0  # keeps the values steady over any number of iterations


def scale_chain(xp: Any, stream: Any, n: int = 1000, launches: int = 10) -> dict[str, Any]:
    x = xp.ones(n, dtype=xp.float32)
    alpha = x.dtype.type(FACTOR)

    def run() -> None:
        for _ in range(launches):
            if np.result_type(x.dtype, alpha) != x.dtype:  # the added check, once per launch
                raise TypeError(f"multiplying by {alpha!r} would change {x.dtype}")
            xp.multiply(x, alpha, out=x)

    return {"run": run, "outputs": {"x": x}}
