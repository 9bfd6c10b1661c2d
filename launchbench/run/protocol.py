"""What the run layer's parts say to each other: a case-pass under way (``CasePass``, stepped round by
round), the messages between the parent and a worker process (frozen dataclasses over the pipe), and the
commands rank 0 sends the other ranks of a case on several GPUs (``RankCommand``).

Parent to worker: ``StartBackend`` first (a worker imports launchbench, then waits for it before it
touches the GPU, so the parent can start a worker while it finishes other work; with ``hold``, then
``PreviousEnded`` before its first canary reading), ``MeasureCase`` (one pass of a case, whole), ``BeginCase`` / ``NextRound`` /
``FinishCase`` (a case sampled round by round), ``RankTask`` (one rank of a case on several GPUs; the
worker ends after it), ``MeasureFloor`` (a scenario's floor: block, measured from this worker; it ends
after it) and ``StopWorker``.

Worker to parent: ``Ready`` or ``StartFailed`` once at start; then, per request, any number of
``ProgressReport`` and one answer: ``Result`` (with ``ending``: the worker ends after sending it),
``Prepared`` (a case begun), ``RoundDone`` (a round sampled), ``FloorDone`` (a floor block's cases)
or ``Failed`` (a step that failed with no case to blame). Rank 0 first sends ``NcclId`` for the parent to pass to the other ranks.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from launchbench.errors import LaunchbenchError
from launchbench.measure.stopping import ModeSpread
from launchbench.results.schema import CaseResult
from launchbench.run.profile import CaseTimes
from launchbench.scenario.core import Case

if TYPE_CHECKING:
    from launchbench.run.floor import FloorRequest


class CasePass(Protocol):
    """One pass of one case under way: prepared, sampled a round at a time, then finished."""

    @property
    def done(self) -> bool:
        """Whether sampling is done (precise enough, full, or its budget spent)."""
        ...

    def round(self) -> bool:
        """One sampling round; whether sampling is done afterwards."""
        ...

    def finish(self) -> CaseResult:
        """The pass's result; the case is closed afterwards."""
        ...

    def close(self) -> None:
        """Free the case without a result (on an interruption)."""
        ...


def run_through(case_pass: CasePass) -> CaseResult:
    """Sample the case-pass round by round until it is done, then its result."""
    try:
        done = case_pass.done
        while not done:
            done = case_pass.round()
    except BaseException:
        case_pass.close()
        raise
    return case_pass.finish()


# --- parent to worker ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StartBackend:
    """Start the backend (the CUDA context, the first canary reading) and answer Ready. With ``hold``,
    the worker starts its backend and waits for ``PreviousEnded`` before its first canary reading: the
    parent asks the next pass's worker to start while the last one is still ending (letting go of its
    CUDA context), and lets it read its reference once that one has ended."""

    hold: bool = False


@dataclass(frozen=True)
class PreviousEnded:
    """The worker before this one has ended: take the first canary reading and answer Ready (after a
    ``StartBackend`` with ``hold``)."""


@dataclass(frozen=True)
class MeasureCase:
    """One pass of a case, whole; ``spreads``: its modes' spread between their earlier passes."""

    case: Case
    spreads: Mapping[str, ModeSpread] = field(default_factory=dict)


@dataclass(frozen=True)
class BeginCase:
    case: Case


@dataclass(frozen=True)
class NextRound:
    pass


@dataclass(frozen=True)
class FinishCase:
    pass


@dataclass(frozen=True)
class RankTask:
    """One rank of a case on several GPUs: the case, the rank, and rank 0's NCCL unique id (None for
    rank 0 itself, which makes it and sends it to the parent first)."""

    case: Case
    rank: int
    world: int
    unique_id: Any = None


@dataclass(frozen=True)
class MeasureFloor:
    """A floor: block measured whole in this worker (``request``) by the floor measure named
    ``measure`` ("module:function", a run.floor.FloorMeasure) on the GPU at ``gpu_address``; the
    worker answers FloorDone (or Failed) and ends."""

    request: FloorRequest
    measure: str
    gpu_address: str | None = None


@dataclass(frozen=True)
class StopWorker:
    pass


Request = (
    StartBackend | MeasureCase | BeginCase | NextRound | FinishCase | RankTask | MeasureFloor | StopWorker
)


# --- worker to parent ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Booted:
    """The worker has imported what it runs (sent as its main loop begins, before it waits for
    StartBackend), so the parent knows its imports no longer load the host."""


@dataclass(frozen=True)
class Ready:
    """The worker's environment, and how its start went: when its main loop began (``time.time()``,
    which the parent compares with its spawn), and the seconds its backend and first canary took."""

    environment: dict[str, Any]
    entered_at: float = 0.0
    backend_s: float = 0.0
    canary_s: float = 0.0


@dataclass(frozen=True)
class StartFailed:
    message: str


@dataclass(frozen=True)
class ProgressReport:
    fraction: float


@dataclass(frozen=True)
class Result:
    result: CaseResult
    ending: bool  # the worker ends after sending it
    times: CaseTimes | None = None  # where the case-pass's time went in the worker


@dataclass(frozen=True)
class Prepared:
    pass


@dataclass(frozen=True)
class RoundDone:
    done: bool


@dataclass(frozen=True)
class Failed:
    message: str


@dataclass(frozen=True)
class FloorDone:
    """A floor block's cases, in its order, as one worker measured them."""

    results: tuple[CaseResult, ...]


@dataclass(frozen=True)
class NcclId:
    unique_id: Any


Answer = Result | Prepared | RoundDone | Failed | FloorDone | NcclId


# --- rank 0 to the other ranks ------------------------------------------------------------------------


class RankVerb(enum.IntEnum):
    BATCH = 1
    LATENCY = 2
    STOP = 3


@dataclass(frozen=True)
class RankCommand:
    """What rank 0 has every rank do next: a batch of ``iters`` iterations of mode ``mode``, a latency
    sample of it, or stop. On the wire (RankControl.exchange) it is three integers."""

    verb: RankVerb
    mode: int = 0
    iters: int = 0

    def wire(self) -> tuple[int, int, int]:
        return (int(self.verb), self.mode, self.iters)

    @classmethod
    def from_wire(cls, values: tuple[int, int, int]) -> RankCommand:
        verb, mode, iters = values
        try:
            return cls(RankVerb(verb), mode, iters)
        except ValueError:
            raise LaunchbenchError(f"rank control: unknown command {verb}") from None
