"""A shard of a run's cases: ``K/N`` takes every case whose index in the plan (the scenario files in the
order given, each file's cases in expansion order) leaves K modulo N, so shard K of N holds cases K,
K + N, K + 2N, …. The N shards are disjoint and cover every case; the same files and arguments give the
same slices on every host; neighbouring cases of a sweep (of like cost) go to different shards."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from launchbench.errors import LaunchbenchError

T = TypeVar("T")

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(LaunchbenchError):
    """A shard that is not K/N with 0 <= K < N."""


@dataclass(frozen=True)
class Shard:
    index: int  # K, counted from 0 (as a Slurm array task id or a Kubernetes completion index)
    count: int  # N

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = _SHARD.match(text)
        if match is None:
            raise ShardError(f"shard {text!r}: give K/N, e.g. 0/4 (K counted from 0, below N)")
        index, count = int(match[1]), int(match[2])
        if count < 1 or index >= count:
            raise ShardError(f"shard {text!r}: K must be at least 0 and below N, and N at least 1")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, items: Sequence[T]) -> list[T]:
        """The items whose index leaves ``index`` modulo ``count``."""
        return [item for position, item in enumerate(items) if position % self.count == self.index]
