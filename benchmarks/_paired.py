"""Paired rounds: two workloads sampled in alternating rounds, compared round by round, so drift of the
host (which moves both alike within a round of a few tens of milliseconds) cancels out of their ratio."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def round_ratios(measured: Sequence[float], reference: Sequence[float], per_round: int) -> list[float]:
    """Median of each round's measured samples over the median of the same round's reference samples.
    Both series hold ``per_round`` samples per round, rounds in order; a trailing partial round is dropped."""
    if per_round < 1:
        raise ValueError("per_round must be at least 1")
    rounds = min(len(measured), len(reference)) // per_round
    a = np.asarray(measured[: rounds * per_round], dtype=float).reshape(rounds, per_round)
    b = np.asarray(reference[: rounds * per_round], dtype=float).reshape(rounds, per_round)
    return list(np.median(a, axis=1) / np.median(b, axis=1))
