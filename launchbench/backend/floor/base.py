"""What every floor layer shares: the refusal of a layer that cannot run here, the context the layers
are built in (the stream, the clock, one device buffer every kernel argument points at) and the
workloads a layer returns by mode."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launchbench.errors import LaunchbenchError
from launchbench.measure.clock import Clock
from launchbench.measure.sampler import Workload


class LayerUnavailable(LaunchbenchError):
    """The layer cannot run here (no C compiler, no torch, no cuda-bindings); the message says why."""


@dataclass
class FloorContext:
    """Where the layers launch: ``stream`` (a CuPy stream), timed by ``clock``, at most ``max_in_flight``
    launches queued; ``buffer`` is a small device array and ``pointer`` its address, which every kernel argument takes; ``ptx`` the empty
    kernels' PTX (None where NVRTC could not make it, with ``ptx_reason``). ``closers`` free what the
    layers made, newest first."""

    stream: Any
    device: int
    clock: Clock
    max_in_flight: int
    nodes: int
    gpu_nodes: int
    buffer: Any  # a small CuPy array: every pointer argument is its address
    pointer: int
    source: str
    ptx: bytes | None
    ptx_reason: str | None = None
    workdir: Path | None = None  # where the C library is built
    shared: dict[str, Any] = field(
        default_factory=dict
    )  # what several layers use: built once (the C library)
    closers: list[Callable[[], object]] = field(default_factory=list)

    def end_failed_capture(self) -> None:
        """After a layer failed to build: end a capture it left open on the stream, so the next layer
        launches normally (the graph, if any, is dropped); an invalidated capture too."""
        from launchbench.backend.graph import abort_capture  # CuPy: only once a layer was built

        abort_capture(self.stream)

    def close(self) -> None:
        """Wait for the stream, then free what the layers made, newest first."""
        self.stream.synchronize()
        while self.closers:
            self.closers.pop()()


@dataclass(frozen=True)
class LayerWorkloads:
    """One layer at one argument count: its workloads by mode (eager, graph) and the launches one
    iteration holds; ``absent_reason`` says why a mode missing from ``workloads`` is absent."""

    workloads: dict[str, Workload]
    launches_per_iter: int
    absent_reason: str | None = None


def kernel_name(args: int) -> str:
    return f"lb_floor_{args}"


def kernel_source(arg_counts: list[int]) -> str:
    """Empty kernels taking ``n`` pointer arguments for each ``n`` of ``arg_counts``."""
    lines = []
    for n in sorted(set(arg_counts)):
        params = ", ".join(f"const float* a{i}" for i in range(n))
        lines.append(f'extern "C" __global__ void {kernel_name(n)}({params}) {{}}')
    return "\n".join(lines) + "\n"
