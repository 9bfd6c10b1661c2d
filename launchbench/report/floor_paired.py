"""What one floor layer costs above another, paired round by round.

The floor's sampler takes SAMPLES_PER_ROUND samples of every mode of every layer in each round, in one
process (run/floor.py), so the k-th round of two layers' modes was sampled at nearly the same time. The
host moves between speed states for a second or so at a time (docs/floor.md, "Fidelity"), and every layer
moves with it: the difference of two layers' round medians, round by round, leaves that out, where the
difference of their overall medians carries it. The estimate is the median over rounds of those
differences with its distribution-free 95% CI (order statistics over rounds: the round is the unit of
inference). Layers sampled in different processes (torch's layer runs in a process of its own) share no
rounds, and a pair with fewer than MIN_ROUNDS shared rounds has no 95% interval between order statistics:
for those there is no paired estimate."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from launchbench.measure.precision import median_ci
from launchbench.measure.sampler import SAMPLES_PER_ROUND
from launchbench.results.schema import MEASURED_STATUSES, WALL, CaseResult, ModePass, ModeResult

MIN_ROUNDS = 6  # the fewest values with a 95% interval between order statistics (measure/precision.py)


@dataclass(frozen=True)
class Paired:
    """A difference of two costs per launch (seconds): the median over shared rounds of the round medians'
    difference, its 95% CI and how many rounds it rests on."""

    median_s: float
    ci_s: tuple[float, float]
    rounds: int


def measured_mode(case: CaseResult, mode: str) -> ModeResult | None:
    """The case's ``mode``, where it was measured (skipped or failed modes: None)."""
    result = case.modes.get(mode)  # type: ignore[call-overload]
    return result if result is not None and result.status in MEASURED_STATUSES else None


def _passes(case: CaseResult, mode: str) -> list[ModePass] | None:
    result = measured_mode(case, mode)
    return None if result is None else list(result.passes)


def _round_medians(one: ModePass, rounds: int, per_launch: int) -> list[float]:
    values = one.samples.get(WALL, [])
    k = SAMPLES_PER_ROUND
    return [statistics.median(values[i * k : (i + 1) * k]) / per_launch for i in range(rounds)]


def _shared_differences(
    upper: CaseResult, upper_mode: str, lower: CaseResult, lower_mode: str
) -> list[float]:
    """Round by round, ``upper``'s round median minus ``lower``'s, over the rounds both were sampled in
    within one process (per launch); empty where they share none."""
    ups, lows = _passes(upper, upper_mode), _passes(lower, lower_mode)
    if not ups or not lows or len(ups) != len(lows):
        return []
    differences: list[float] = []
    for up, low in zip(ups, lows, strict=True):
        if up.host.pid is None or up.host.pid != low.host.pid:
            return []  # not one process's rounds
        rounds = min(up.size, low.size) // SAMPLES_PER_ROUND
        above = _round_medians(up, rounds, upper.launches_per_iter)
        below = _round_medians(low, rounds, lower.launches_per_iter)
        differences += [a - b for a, b in zip(above, below, strict=True)]
    return differences


def paired(upper: CaseResult, upper_mode: str, lower: CaseResult, lower_mode: str) -> Paired | None:
    """``upper``'s ``upper_mode`` cost per launch over ``lower``'s ``lower_mode``, paired by round; None
    where they share fewer than MIN_ROUNDS rounds of one process."""
    differences = _shared_differences(upper, upper_mode, lower, lower_mode)
    if len(differences) < MIN_ROUNDS:
        return None
    return Paired(statistics.median(differences), median_ci(differences), len(differences))
