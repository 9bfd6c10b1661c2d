"""A floor measure of scripted numbers (run.floor.FloorMeasure) for ab's floor rounds without a GPU: a
worker started as a program imports it by name (``floor_fakes:scripted_floor``, with tests/ on its
PYTHONPATH) and builds the block's cases through the product's run.floor.case_result."""

from __future__ import annotations

import os
import random

from fakes import ORDER_FILE_VARIABLE, SIDE_VARIABLE

from launchbench.backend.floor.base import LayerWorkloads
from launchbench.measure.sampler import ModeSamples, SamplingOutcome
from launchbench.results.schema import CaseResult, HostData
from launchbench.run.floor import FloorRequest, case_result, plan

FLOOR_SLOWDOWN_VARIABLE = "LAUNCHBENCH_TEST_FLOOR_SLOWDOWN"  # every layer costs 1 + this times as much
FLOOR_SKIP_VARIABLE = "LAUNCHBENCH_TEST_FLOOR_SKIP"  # comma-separated layers this side cannot run
FLOOR_FAIL_VARIABLE = "LAUNCHBENCH_TEST_FLOOR_FAIL"  # set: the floor's process fails
SKIP_REASON = "not installed here (a scripted skip)"
# the host's speed in the round a floor process runs in (the n-th floor process of the run is in round
# n // 2): both sides' processes of a round meet the same level, the rounds different ones
ROUND_LEVELS = (1.0, 1.3, 0.85, 1.2, 0.9, 1.35)
EAGER_US = {"c": 3.7, "bindings": 4.8, "cupy_raw": 5.3, "torch": 10.2}
GRAPH_US = {"c": 1.1, "bindings": 1.4, "cupy_raw": 1.6, "torch": 2.0}
SAMPLES = 12


def _logged(request: FloorRequest, gpu_address: str | None) -> int:
    """Append "SIDE floor SCENARIO max_time=…" to the order file; how many floor lines it held before."""
    path = os.environ[ORDER_FILE_VARIABLE]
    with open(path, "a+") as order:
        order.seek(0)
        before = sum(1 for line in order.read().splitlines() if " floor " in line)
        side = os.environ.get(SIDE_VARIABLE, "?")
        order.write(f"{side} floor {request.scenario.name} max_time={request.spec.max_time:g}\n")
    return before


def _samples(us: float, rng: random.Random) -> ModeSamples:
    wall = [us * 1e-6 * (1 + rng.gauss(0, 0.003)) for _ in range(SAMPLES)]
    return ModeSamples(iters_per_sample=100, wall=wall, cpu=wall, gpu=wall, latency=wall, target_met=True)


def scripted_floor(request: FloorRequest, gpu_address: str | None) -> list[CaseResult]:
    """The block's cases: each layer eager and as a graph at its scripted cost (plus 0.02 µs per kernel
    argument) times the round's host level and 1 + FLOOR_SLOWDOWN_VARIABLE; the layers named in
    FLOOR_SKIP_VARIABLE skipped with SKIP_REASON."""
    if os.environ.get(FLOOR_FAIL_VARIABLE):
        raise RuntimeError("a scripted floor failure")
    level = ROUND_LEVELS[(_logged(request, gpu_address) // 2) % len(ROUND_LEVELS)]
    factor = level * (1 + float(os.environ.get(FLOOR_SLOWDOWN_VARIABLE, "0")))
    skipped = set(os.environ.get(FLOOR_SKIP_VARIABLE, "").split(","))
    rng = random.Random(os.getpid())
    modes: dict[str, ModeSamples] = {}
    for case in plan(request.spec):
        extra = (case.args or 0) * 0.02
        modes[f"{case.case_id}|eager"] = _samples((EAGER_US[case.layer] + extra) * factor, rng)
        modes[f"{case.case_id}|graph"] = _samples((GRAPH_US[case.layer] + extra) * factor, rng)
    outcome = SamplingOutcome(modes, False, 0.0, None, ())
    host = HostData(pid=os.getpid())
    return [
        case_result(request, case, None, f"{case.layer}: {SKIP_REASON}", None, host)
        if case.layer in skipped
        else case_result(request, case, LayerWorkloads({}, 1), None, outcome, host)
        for case in plan(request.spec)
    ]
