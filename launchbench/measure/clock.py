"""Clocks are injected so the sampling loop can be driven by a scripted clock in tests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol


class Clock(Protocol):
    def wall(self) -> float:
        """Monotonic wall time in seconds."""

    def thread(self) -> float:
        """CPU time of the calling thread in seconds."""


class SystemClock:
    """perf_counter for wall time, thread_time for the launching thread's CPU time."""

    def wall(self) -> float:
        return time.perf_counter_ns() * 1e-9

    def thread(self) -> float:
        return time.thread_time_ns() * 1e-9


@dataclass(frozen=True)
class ClockReading:
    sm_mhz: float | None
    mem_mhz: float | None
    throttle_reasons: tuple[str, ...] = field(default=())

    @property
    def throttled(self) -> bool:
        return bool(self.throttle_reasons)


class ClockMonitor(Protocol):
    """Reads the GPU's clocks and clock-throttle reasons (NVML on a real GPU)."""

    def read(self) -> ClockReading: ...
