"""A scenario's floor: block in ``launchbench ab``: measured paired, round by round, as ab pairs cases.

A floor's layers are each built and sampled in a process of their own that a floor worker starts
(run.floor; with processes: shared, every layer but torch in the worker itself), so ab's unit for a
floor is one whole floor worker per side per round: in round k (pass k of both sides), once the round's
cases are in, each side measures every layer of the block in a fresh worker of its own variant (its
interpreter, paths and environment, pinned to the CPU its case workers use), on 1/rounds of the block's
time budget and sample counts. The sides take turns, the order alternating over blocks and rounds as
over cases (run.ab.round_order). Each worker's cases go into its side's record as pass k, so a layer's
round k holds, on each side, the samples of that side's round-k worker, and compare_paired judges the
floor's rows on the log of B's round median over A's, as any other row. A layer one side cannot run is
recorded there as skipped with its reason (the row is then compared as not measured on that side, never
against nothing); a floor worker that fails or dies records every case of the block failed on its side,
which then measures that block no more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Overrides
from launchbench.results.schema import CaseResult
from launchbench.run.executor import WorkerExecutor
from launchbench.run.floor import KINDS, FloorRequest, failed_floor, floor_requests, one_round, plan
from launchbench.run.protocol import FloorDone, MeasureFloor
from launchbench.run.runner import Plan
from launchbench.run.session import RunSession


@dataclass(frozen=True)
class FloorPair:
    """One scenario's floor: block as each side's files hold it (A's request, B's)."""

    requests: tuple[FloorRequest, FloorRequest]

    @property
    def rounds(self) -> int:
        return max(request.measure.passes for request in self.requests)

    def measures(self, side: int, round_index: int) -> bool:
        """Whether ``side`` measures the block in round ``round_index``."""
        return round_index < self.requests[side].measure.passes


def _case_ids(request: FloorRequest) -> list[str]:
    return [case.case_id for case in plan(request.spec)]


def _differ(a: FloorRequest, b: FloorRequest | None) -> LaunchbenchError:
    """The refusal of two sides whose floor: blocks of one scenario do not hold the same cases."""
    only_a = sorted(set(_case_ids(a)) - set(_case_ids(b) if b else []))
    only_b = sorted(set(_case_ids(b) if b else []) - set(_case_ids(a)))
    side, case_id = ("A", only_a[0]) if only_a else ("B", only_b[0])
    where = a.scenario.file if b is None or b.scenario.file == a.scenario.file else b.scenario.file
    return LaunchbenchError(
        f"{where}: reading the scenario: ab's variants must hold the same floor cases; only {side} has "
        f"{a.scenario.name}/{case_id} (A's floor: {', '.join(_case_ids(a))}; "
        f"B's: {', '.join(_case_ids(b)) if b else 'none'})"
    )


def paired_floors(a: Plan, b: Plan, overrides: Overrides, device: int) -> list[FloorPair]:
    """Both sides' floor: blocks matched on the scenario, in A's order; LaunchbenchError when the two
    sides' blocks do not hold the same layers and argument counts (the same cases)."""
    b_requests = {r.scenario.name: r for r in floor_requests(b.files, b.scenarios, overrides, device)}
    pairs = []
    for request in floor_requests(a.files, a.scenarios, overrides, device):
        other = b_requests.pop(request.scenario.name, None)
        if other is None or _case_ids(other) != _case_ids(request):
            raise _differ(request, other)
        pairs.append(FloorPair((request, other)))
    for other in b_requests.values():
        raise LaunchbenchError(
            f"{other.scenario.file}: reading the scenario: ab's variants must hold the same floor cases; "
            f"only B's {other.scenario.name} has a floor: block"
        )
    return pairs


def failed_before(session: RunSession, request: FloorRequest) -> bool:
    """Whether the block's floor failed on this side in an earlier round (it is not measured again)."""
    return any(
        c.scenario == request.scenario.name and c.kinds == KINDS and c.error for c in session.record.cases
    )


def measure_floor_round(
    executor: WorkerExecutor,
    session: RunSession,
    request: FloorRequest,
    round_index: int,
    measure: str,
    progress: Callable[[float], None],
) -> Sequence[CaseResult]:
    """One side's round of one floor block: measured whole in a fresh worker by ``measure`` ("module:
    function", a run.floor.FloorMeasure), each case added to the side's session as pass ``round_index``;
    the merged cases."""
    this_round = one_round(request)
    address = session.record.environment.gpu.pci_address
    answer = executor.measure_floor(MeasureFloor(this_round, measure, address), progress)
    if isinstance(answer, FloorDone):
        results: Sequence[CaseResult] = answer.results
    else:
        results = failed_floor(this_round, f"the floor's process: {answer.message}")
    return [session.add_result(result, round_index) for result in results]
