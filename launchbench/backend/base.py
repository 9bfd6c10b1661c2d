"""What the rest of launchbench needs from a GPU backend (the CuPy one, or a scripted one in tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import Clock, ClockMonitor
from launchbench.measure.sampler import Workload
from launchbench.results.schema import GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case


@dataclass(frozen=True)
class OutputCheck:
    """Graph-written buffers against eager-written ones, from the same initial contents."""

    match: bool | None  # None: the chain writes no buffer, or no graph to compare
    detail: str
    failed_modes: tuple[str, ...] = ()  # the modes whose outputs differ (a shape-changing case has several)


class CaseRefused(LaunchbenchError):
    """The case cannot run here (e.g. its buffers would not fit in free GPU memory); nothing was allocated."""


class PreparedCase(Protocol):
    workloads: dict[str, Workload]  # by mode; a graph mode that could not be prepared is absent
    lifecycle: GraphLifecycle | None
    graph_failure: str | None  # why the graph modes absent from workloads are absent

    def check_outputs(self) -> OutputCheck: ...

    def shape_counts(self) -> dict[str, ShapeCounts]:
        """Per mode of a shape-changing case, what it did so far (empty for other cases)."""

    def harness_cost(self) -> float:
        """Seconds per iteration that the timing loop itself costs around an empty call."""

    def close(self) -> None: ...


class Backend(Protocol):
    monitor: ClockMonitor | None
    clock: Clock

    def environment(self) -> dict[str, Any]: ...

    def prepare(self, case: Case) -> PreparedCase: ...
