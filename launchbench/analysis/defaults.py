"""Defaults that compare, the gate and the history share, in a module that loads nothing else: a command
line shows them in its options without loading the statistics (numpy, scipy)."""

from __future__ import annotations

from typing import Literal

# the launch's cost to the launching thread (wall and CPU per launch) and the GPU's own time per
# iteration; wall per iteration and latency mostly say what these say (choose them with -m)
DEFAULT_METRICS: tuple[str, ...] = ("wall_us_per_launch", "cpu_us_per_launch", "gpu_us_per_iter")
# what a CompareSettings built without a choice compares (the library's callers): the commands' defaults,
# wall time per iteration and latency
COMPARED_METRICS: tuple[str, ...] = (
    "wall_us_per_launch",
    "wall_us_per_iter",
    "cpu_us_per_launch",
    "gpu_us_per_iter",
    "latency_us",
)
DEFAULT_THRESHOLD = 0.05  # the smallest relative change that counts
# the significance level of compare's and ab's t tests (a false 'slower' or 'faster' in at most 1% of a
# row-metric's A/A comparisons) and of the history's change points
DEFAULT_ALPHA = 0.01
GateScope = Literal["all", "gpu-bound", "host-bound"]  # which rows a --fail-on gate judges
GATE_SCOPES: tuple[GateScope, ...] = ("all", "gpu-bound", "host-bound")
DEFAULT_GATE_SCOPE: GateScope = "all"
