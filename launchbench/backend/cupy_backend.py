"""The CuPy backend: one CUDA device, its streams and its fixed reference; it prepares each case
(prepared.py for a chain, shapes.py for a chain at many shapes) and reads the environment."""

from __future__ import annotations

from functools import partial
from typing import Any

import cupy

from launchbench.backend.base import PreparedCase, RankInfo
from launchbench.backend.canary import ReferenceCanary
from launchbench.backend.gpu_probe import collect_environment
from launchbench.backend.graph import capture
from launchbench.backend.nccl_ranks import unique_id
from launchbench.backend.nvml import NvmlMonitor
from launchbench.backend.prepared import CupyPreparedCase
from launchbench.backend.shapes import ShapePreparedCase
from launchbench.kinds.empty import EMPTY_NAME, EMPTY_SOURCE
from launchbench.kinds.torch_step import holds_torch
from launchbench.measure.clock import Clock
from launchbench.results.schema import CanaryReading
from launchbench.scenario.core import Case


def _pci_address(device: cupy.cuda.Device) -> str | None:
    """The device's PCI bus id (cudaDeviceGetPCIBusId, "0000:19:00.0"), None where CUDA does not say."""
    for read in (lambda: device.pci_bus_id, lambda: cupy.cuda.runtime.deviceGetPCIBusId(device.id)):
        try:
            return str(read())
        except Exception:  # noqa: BLE001 - a fact for the record only, never the reason a run fails
            continue
    return None


class CupyBackend:
    """Runs cases on one CUDA device through CuPy.

    Every case runs on the same streams: stream 0 is created first, with the backend, and a chain's
    auxiliary stream N is created when a case first asks for it and reused after. A new stream per case
    would make results depend on the case's place in the run: on the H200 a 10-node graph replays in
    6.1 µs on the first streams a process creates and in 7.5–8.3 µs on later ones (stable per stream).
    """

    def __init__(self, device: int, clock: Clock):
        self.device_index = device
        self.device = cupy.cuda.Device(device)
        self.device.use()
        self.clock = clock
        self.monitor = NvmlMonitor.for_cuda_device(device)
        self.pci_address = _pci_address(self.device)
        self._streams: dict[int, cupy.cuda.Stream] = {}
        self.stream(0)
        # before anything else touches the GPU, so its first reading is that of a fresh process
        self._canary = ReferenceCanary(self.stream(0), clock)
        self._warm_graph_machinery()

    def _warm_graph_machinery(self) -> None:
        """Capture and replay a one-node graph once, through the same capture() every case uses, so the
        first case of a worker does not pay the process's one-time graph costs in its life-cycle times
        (each pass runs in a fresh worker; on the H200 its first case's graph setup was 513 µs without
        this, 144 µs with it, like the next one-node case's 133 µs). Best effort: a case's own capture
        reports real failures."""
        try:
            kernel = cupy.RawKernel(EMPTY_SOURCE, EMPTY_NAME)
            capture(self.stream(0), [partial(kernel, (1,), (1,), ())], self.clock)
        except Exception:  # noqa: BLE001 - warm-up only; never the reason a run fails
            return

    def canary(self) -> CanaryReading:
        """A reading of the worker's fixed reference (backend/canary.py) on stream 0."""
        return self._canary.read()

    def stream(self, index: int) -> cupy.cuda.Stream:
        """The backend's stream ``index`` (0: the main stream of every chain), created on first use."""
        if index not in self._streams:
            self._streams[index] = cupy.cuda.Stream(non_blocking=True)
        return self._streams[index]

    def environment(self) -> dict[str, Any]:
        return collect_environment(self.device_index)

    def prepare(self, case: Case, ranks: RankInfo | None = None) -> PreparedCase:
        if case.shapes is not None:
            return ShapePreparedCase(case, self.clock, self.stream)
        if holds_torch(case.steps):
            from launchbench.backend.torch_graph import TorchPreparedCase

            return TorchPreparedCase(case, self.clock, self.stream, ranks)
        return CupyPreparedCase(case, self.clock, self.stream, ranks)

    def nccl_unique_id(self) -> Any:
        return unique_id()
