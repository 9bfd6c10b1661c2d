"""The changed side of the ab example (scenarios/ab_launch.yaml): the same kernels as the base, but
every launch first normalizes the factor to a NumPy scalar of the array's dtype: host work a pull
request could add without touching the GPU work (the graph replays the same kernels)."""

from __future__ import annotations

from typing import Any

import numpy as np

FACTOR = 1.0


def scale_chain(xp: Any, stream: Any, n: int = 1000, launches: int = 10) -> dict[str, Any]:
    x = xp.ones(n, dtype=xp.float32)

    def run() -> None:
        for _ in range(launches):
            alpha = np.asarray(FACTOR, dtype=x.dtype)[()]  # a NumPy scalar of x's dtype, per launch
            xp.multiply(x, alpha, out=x)

    return {"run": run, "outputs": {"x": x}}
