"""The base side of the ab example (scenarios/ab_launch.yaml): a chain of in-place scales, one CuPy
ufunc launch each, the factor a NumPy scalar of the array's dtype made once at build time."""

from __future__ import annotations

from typing import Any

FACTOR = 1.0  # keeps the values steady over any number of iterations


def scale_chain(xp: Any, stream: Any, n: int = 1000, launches: int = 10) -> dict[str, Any]:
    x = xp.ones(n, dtype=xp.float32)
    alpha = x.dtype.type(FACTOR)

    def run() -> None:
        for _ in range(launches):
            xp.multiply(x, alpha, out=x)

    return {"run": run, "outputs": {"x": x}}
