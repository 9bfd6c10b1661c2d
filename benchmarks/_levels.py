"""Host levels of per-process values: on some hosts an eager launch (and with it every host-bound
number of a process) sits at one of two levels for the life of a process, so a fidelity check compares
level with level. Shared by benchmarks/fidelity.py and benchmarks/floor_fidelity.py."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

LEVEL_GAP = 0.12  # sorted per-process values more than 12% apart belong to two levels
Pair = tuple[str, list[float], list[float]]  # (level name, one side's values, the other's)


def levels(values: Sequence[float], gap: float = LEVEL_GAP) -> list[list[float]]:
    """``values`` sorted and split where one value exceeds the one before by more than ``gap``: one list
    per level, lowest first (at most two: the largest jump, where it exceeds ``gap``)."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return [ordered]
    jumps = [(ordered[i + 1] / ordered[i] - 1.0, i + 1) for i in range(len(ordered) - 1)]
    biggest, at = max(jumps)
    return [ordered[:at], ordered[at:]] if biggest > gap else [ordered]


def match_levels(ours: list[list[float]], bare: list[list[float]]) -> list[Pair]:
    """(name, launchbench level, bare level) pairs: low with low and high with high where both sides have
    two; a single level on one side paired with the nearer level of the other, the farther "unmatched"."""
    if len(ours) == len(bare):
        return list(zip(("low", "high"), ours, bare)) if len(ours) == 2 else [("one", ours[0], bare[0])]
    one, two = (ours[0], bare) if len(ours) == 1 else (bare[0], ours)
    center = statistics.median(one)
    near = min(two, key=lambda level: abs(statistics.median(level) / center - 1.0))
    far = two[1] if near is two[0] else two[0]
    name = "low" if near is two[0] else "high"
    if len(ours) == 1:
        return [(name, one, near), ("unmatched", one, far)]
    return [(name, near, one), ("unmatched", far, one)]


FLOOR_BAND = 0.06  # the floor state: values within 6% of a side's lowest


def floor_level(values: Sequence[float], band: float = FLOOR_BAND) -> list[float]:
    """The values at the floor state: those within ``band`` of the lowest, sorted. A host's slower
    states are not two but several (on the H200 a one-node cuGraphLaunch from C at about 1.28, 1.45,
    1.85 and 2.1 µs), and how often a side visits each is the host's doing, not its loop's; the state
    both sides reach and that sits still is the fastest one."""
    ordered = sorted(values)
    return [v for v in ordered if ordered and v <= ordered[0] * (1.0 + band)]
