"""The canary around every case: a worker reads its backend's fixed reference when it starts and after
each case; a reading that moved beyond the bounds from the start marks the case as measured in a disturbed
state, and the worker that holds that state is replaced before the next case."""

from __future__ import annotations

from dataclasses import dataclass

from launchbench.results.schema import CanaryCheck, CanaryReading, CaseResult

GRAPH_BOUND = 0.03  # the graph reading may move 3% (on the H200: at most +1.6% over four quickstart runs)


@dataclass(frozen=True)
class CanaryBounds:
    """How far the graph reading may move from the worker's start. The eager reading is recorded but
    bounds nothing: it follows the host's launch-cost level, which on the H200 moves by 20–40% within one
    process from one case to the next (results/quickstart-h200/results.json, each pass's canary)."""

    graph: float = GRAPH_BOUND

    def disturbed(self, start: CanaryReading, after: CanaryReading) -> bool:
        return abs(after.graph_s_per_node / start.graph_s_per_node - 1.0) > self.graph


class CanaryWatch:
    """One worker's readings: the first one (``start``) and the latest."""

    def __init__(self, start: CanaryReading | None, bounds: CanaryBounds | None = None):
        self.start = start
        self.last = start
        self.bounds = bounds or CanaryBounds()

    def check(self, after: CanaryReading | None) -> CanaryCheck | None:
        """The check of the case that ran since the last reading (None without a canary)."""
        if self.start is None or self.last is None or after is None:
            return None
        check = CanaryCheck(
            start=self.start,
            before=self.last,
            after=after,
            disturbed=self.bounds.disturbed(self.start, after),
        )
        self.last = after
        return check


def with_canary(result: CaseResult, check: CanaryCheck | None) -> CaseResult:
    """``result`` (one pass of a case) with the canary check on each of its modes' passes."""
    if check is None or not result.modes:
        return result
    modes = {
        name: mode.model_copy(
            update={"passes": [p.model_copy(update={"canary": check}) for p in mode.passes]}
        )
        for name, mode in result.modes.items()
    }
    return result.model_copy(update={"modes": modes})
