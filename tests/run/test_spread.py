"""The spread between a case's earlier passes that its next pass's stopping rule weighs against."""

import math
import statistics

from launchbench.results.schema import CaseResult, ModePass, ModeResult
from launchbench.run.spread import pass_spreads, series_spread


def _case(medians: list[float], status: str = "budget", error: str | None = None) -> CaseResult:
    passes = [
        ModePass(iters_per_sample=1, samples={"wall_s_per_iter": [m * 0.99, m, m * 1.01], "latency_s": [m]})
        for m in medians
    ]
    mode = ModeResult(mode="eager", status=status, passes=passes)
    return CaseResult(
        scenario="s",
        case_id="c",
        chain="c",
        kinds="empty",
        params={},
        launches_per_iter=1,
        modes={"eager": mode},
        error=error,
    )


def test_the_spread_is_the_sd_of_the_log_pass_medians():
    assert series_spread([1.0]) is None
    assert series_spread([1.0, -1.0]) is None
    assert math.isclose(series_spread([1.0, 2.0]), statistics.stdev([0.0, math.log(2.0)]))


def test_pass_spreads_of_a_case():
    assert pass_spreads(None) == {}
    assert pass_spreads(_case([1e-6])) == {}  # one pass: no spread yet
    spreads = pass_spreads(_case([1e-6, 1.2e-6, 1.1e-6]))
    wall = statistics.stdev(math.log(m) for m in (1e-6, 1.2e-6, 1.1e-6))
    assert math.isclose(spreads["eager"].wall, wall)
    assert math.isclose(spreads["eager"].latency, wall)
    assert spreads["eager"].cpu is None and spreads["eager"].gpu is None
    assert pass_spreads(_case([1e-6, 2e-6], error="boom")) == {}
    assert pass_spreads(_case([1e-6, 2e-6], status="failed")) == {}
