"""How far a case's earlier passes sat apart, mode by mode and series by series: what the stopping rule
of its next pass weighs the pass's own precision against (measure.stopping.SpreadShare).

A multi-pass row's CI is made of its pass medians (docs/statistics.md); once a pass median is known
far more precisely than the passes differ, more samples in that pass leave the row's CI as it is.
"""

from __future__ import annotations

import math
import statistics

from launchbench.measure.stopping import MIN_SPREAD_PASSES, ModeSpread
from launchbench.results.metrics import CPU, GPU, LATENCY, MEASURED_STATUSES, WALL
from launchbench.results.schema import CaseResult, ModeResult


def series_spread(medians: list[float]) -> float | None:
    """The standard deviation of the log pass medians; None with fewer than MIN_SPREAD_PASSES or a
    median that is not positive."""
    if len(medians) < MIN_SPREAD_PASSES or not all(m > 0 and math.isfinite(m) for m in medians):
        return None
    return statistics.stdev(math.log(m) for m in medians)


def mode_spread(mode: ModeResult) -> ModeSpread:
    """One mode's spread of every series between its passes."""
    wall, latency, cpu, gpu = (series_spread(mode.pass_medians(key)) for key in (WALL, LATENCY, CPU, GPU))
    return ModeSpread(wall, latency, cpu, gpu)


def pass_spreads(result: CaseResult | None) -> dict[str, ModeSpread]:
    """Each measured mode's spread between the case's passes so far (none before its first passes)."""
    if result is None or result.error:
        return {}
    spreads = {
        name: mode_spread(mode) for name, mode in result.modes.items() if mode.status in MEASURED_STATUSES
    }
    return {name: spread for name, spread in spreads.items() if spread.wall is not None}
