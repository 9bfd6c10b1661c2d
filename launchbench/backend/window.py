"""Keeps the launch queue bounded: after every block of launches an event is recorded, and the thread
waits (sleeping, so the wait is not counted as CPU time) for the block before it. At most two blocks
are ever queued, so a chain of any length measures instead of filling the ~1000-entry queue."""

from __future__ import annotations

import cupy


class LaunchWindow:
    def __init__(self, stream: cupy.cuda.Stream, max_in_flight: int):
        self.stream = stream
        self.block = max(1, max_in_flight // 2)
        self._events = [cupy.cuda.Event(block=True, disable_timing=True) for _ in range(3)]
        self._next = 0
        self._outstanding: list[cupy.cuda.Event] = []

    def reset(self) -> None:
        self._outstanding.clear()

    def mark(self) -> None:
        """Call after each block of at most ``self.block`` launches."""
        event = self._events[self._next]
        self._next = (self._next + 1) % len(self._events)
        event.record(self.stream)
        self._outstanding.append(event)
        if len(self._outstanding) > 1:
            self._outstanding.pop(0).synchronize()
