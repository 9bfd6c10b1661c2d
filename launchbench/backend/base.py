"""What the rest of launchbench needs from a GPU backend (the CuPy one, or a scripted one in tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import Clock, ClockMonitor
from launchbench.measure.sampler import Workload
from launchbench.results.schema import CanaryReading, GraphLifecycle, ShapeCounts
from launchbench.scenario.core import Case


@dataclass(frozen=True)
class OutputCheck:
    """Graph-written buffers against eager-written ones, from the same initial contents."""

    match: bool | None  # None: the chain writes no buffer, or no graph to compare
    detail: str
    failed_modes: tuple[str, ...] = ()  # the modes whose outputs differ (a shape-changing case has several)


@dataclass(frozen=True)
class RankInfo:
    """This process's place in a case on several GPUs: one rank per GPU, all joined by one NCCL
    communicator whose unique id rank 0 made and the parent passed to every rank."""

    rank: int
    world: int
    unique_id: Any


class RankControl(Protocol):
    """How the ranks of a case keep in step: rank 0 decides, every rank does the same."""

    def exchange(self, command: tuple[int, int, int] | None) -> tuple[int, int, int]:
        """Rank 0 passes a command, every other rank None; every rank returns rank 0's command, once
        every rank has asked (a barrier: the ranks leave it together)."""
        ...

    def common(self, flags: list[int]) -> list[int]:
        """The elementwise minimum of every rank's flags (what every rank has)."""
        ...


class CaseRefused(LaunchbenchError):
    """The case cannot run here (e.g. its buffers would not fit in free GPU memory); nothing was allocated."""


class PreparedCase(Protocol):
    workloads: dict[str, Workload]  # by mode; a graph mode that could not be prepared is absent
    lifecycle: GraphLifecycle | None
    graph_failure: str | None  # why the graph modes absent from workloads are absent
    control: RankControl | None  # a case on several GPUs: how its ranks keep in step

    def check_outputs(self) -> OutputCheck: ...

    def shape_counts(self) -> dict[str, ShapeCounts]:
        """Per mode of a shape-changing case, what it did so far (empty for other cases)."""

    def drop_graph(self, reason: str) -> None:
        """Measure and check eager only (another rank has no graph)."""

    def harness_cost(self) -> float:
        """Seconds per iteration that the timing loop itself costs around an empty call."""

    def close(self) -> None: ...


@runtime_checkable
class KeepsModeGraphs(Protocol):
    """A prepared case whose graph modes keep their own life cycle and failure, by mode (a torch
    chain's: backend/torch_graph.py); any other case's graph mode has ``lifecycle`` and ``graph_failure``."""

    mode_lifecycles: dict[str, GraphLifecycle]
    mode_failures: dict[str, str]


@dataclass(frozen=True)
class GraphDrawing:
    """A captured graph drawn: Graphviz DOT, and a one-line count of its nodes by type where the nodes
    were read (through cuda-bindings), else None."""

    dot: str
    summary: str | None


@runtime_checkable
class DrawsGraph(Protocol):
    """A prepared case that can draw the graph it captured (``launchbench graph``)."""

    def draw_graph(self) -> GraphDrawing:
        """The captured graph as DOT; LaunchbenchError where it was not captured or cannot be drawn."""
        ...


class Backend(Protocol):
    monitor: ClockMonitor | None
    clock: Clock
    pci_address: str | None  # the GPU's PCI bus id ("0000:19:00.0"), None where unknown

    def environment(self) -> dict[str, Any]: ...

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> PreparedCase: ...

    def canary(self) -> CanaryReading | None:
        """A reading of the backend's fixed reference (the same small measurement every time), taken when
        the worker starts and after every case; None where the backend has none."""
        ...

    def nccl_unique_id(self) -> Any:
        """A new NCCL unique id (rank 0 makes it; the parent passes it to the other ranks)."""
