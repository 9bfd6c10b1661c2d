"""The output check of a chain with many buffers, kept on the GPU: each snapshot is one flat device copy
per dtype (every output a segment of it), two snapshots are compared with one pass over each copy that
counts, per output, the elements that differ (NaN equal to NaN, as ``np.array_equal(equal_nan=True)``),
and only the outputs that differ travel to the host, where check.judge_outputs decides (exact, within
rounding, or different) with the same words as check.compare_outputs.

A chain at 256 shapes writes about 3,000 buffers: copying each to the host and comparing it there took
6–9 s a pass on the H200, and the whole check of such a case, its walks included, takes 0.7–1.4 s this
way (results/speed/shape_changes-h200-c). Outputs in host memory (the rank channel's pinned buffers)
are copied and compared on the host. Where the device has no room for the copies
(``cupy.cuda.memory.OutOfMemoryError``), ``snapshot`` raises it and the caller checks on the host."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cupy
import numpy as np

from launchbench.backend.base import OutputCheck
from launchbench.backend.check import judge_outputs
from launchbench.backend.count_many import differing, segment_counts
from launchbench.kinds.base import BuiltStep


@dataclass(frozen=True)
class Segment:
    """Where one output lies in its dtype's flat copy."""

    dtype: np.dtype
    start: int
    stop: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class DeviceSnapshot:
    """Every output's contents at one moment: device outputs in one flat copy per dtype, host outputs as
    host copies; ``names`` in the order snapshot_steps gives them."""

    names: tuple[str, ...]
    flats: dict[np.dtype, cupy.ndarray]
    segments: dict[str, Segment]
    host: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.names)

    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.flats.values()) + sum(a.nbytes for a in self.host.values())

    def on_host(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """These outputs copied to the host, in their shapes."""
        out = {}
        for name in names:
            if name in self.host:
                out[name] = self.host[name]
                continue
            seg = self.segments[name]
            out[name] = cupy.asnumpy(self.flats[seg.dtype][seg.start : seg.stop]).reshape(seg.shape)
        return out


def snapshot(stream: cupy.cuda.Stream, steps: Sequence[BuiltStep]) -> DeviceSnapshot:
    """Every step's outputs, once ``stream`` is done, copied on the device (host outputs on the host)."""
    stream.synchronize()
    names: list[str] = []
    grouped: dict[np.dtype, list[cupy.ndarray]] = {}
    segments: dict[str, Segment] = {}
    host: dict[str, np.ndarray] = {}
    ends: dict[np.dtype, int] = {}
    for built in steps:
        for name, array in built.outputs.items():
            names.append(name)
            if not isinstance(array, cupy.ndarray):
                host[name] = np.array(array, copy=True)
                continue
            start = ends.get(array.dtype, 0)
            ends[array.dtype] = start + array.size
            segments[name] = Segment(array.dtype, start, start + array.size, tuple(array.shape))
            grouped.setdefault(array.dtype, []).append(array.ravel())
    with stream:
        flats = {dtype: cupy.concatenate(parts) for dtype, parts in grouped.items()}
    stream.synchronize()
    return DeviceSnapshot(tuple(names), flats, segments, host)


def differing_counts(a: DeviceSnapshot, b: DeviceSnapshot, stream: cupy.cuda.Stream) -> dict[str, int]:
    """Per output, how many of its elements differ between two snapshots of the same steps (counted on
    ``stream``, one count_many.segment_counts per dtype)."""
    counts: dict[str, int] = {}
    with stream:
        for dtype, flat in a.flats.items():
            members = [(name, seg) for name, seg in a.segments.items() if seg.dtype == dtype]
            starts = np.array([seg.start for _, seg in members], dtype=np.int64)
            stops = np.array([seg.stop for _, seg in members], dtype=np.int64)
            per_output = segment_counts(flat, b.flats[dtype], starts, stops)
            counts.update({name: int(n) for (name, _), n in zip(members, per_output)})
    for name, array in a.host.items():
        counts[name] = int(differing(array, b.host[name]).sum())
    return counts


def judge_against(
    initial: DeviceSnapshot, eager: DeviceSnapshot, stream: cupy.cuda.Stream
) -> Callable[[DeviceSnapshot], OutputCheck]:
    """check.compare_outputs(initial, eager, graph) for every graph snapshot it is given: which outputs
    eager left unchanged is counted once, each graph's differing outputs alone copied to the host.
    Every kernel and copy runs on ``stream``, the case's own: work on a second stream can leave later
    graph replays of the process slower (docs/methodology.md, what slows graph replays)."""
    order = {name: i for i, name in enumerate(eager.names)}
    counts = differing_counts(eager, initial, stream)
    unchanged = sorted((name for name, n in counts.items() if n == 0), key=order.__getitem__)

    def judge(graph: DeviceSnapshot) -> OutputCheck:
        counts = differing_counts(eager, graph, stream)
        differing = sorted((name for name, n in counts.items() if n > 0), key=order.__getitem__)
        with stream:
            expected, got = eager.on_host(differing), graph.on_host(differing)
        pairs = {name: (expected[name], got[name]) for name in differing}
        return judge_outputs(len(eager.names), eager.nbytes(), unchanged, pairs)

    return judge
