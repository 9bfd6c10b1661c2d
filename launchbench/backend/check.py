"""Graph output against eager output: the check that a fast answer is also a right one (numpy only;
device_check.py keeps the snapshots of a chain with many buffers on the GPU and judges with the same words)."""

from __future__ import annotations

import numpy as np

from launchbench.backend.base import OutputCheck

ROUNDING_RTOL = {2: 1e-2, 4: 1e-5, 8: 1e-12}


def compare_outputs(
    initial: dict[str, np.ndarray], eager: dict[str, np.ndarray], graph: dict[str, np.ndarray]
) -> OutputCheck:
    """Exact equality, or closeness within the dtype's rounding for reductions whose order may vary."""
    unchanged = [name for name in eager if np.array_equal(eager[name], initial[name], equal_nan=True)]
    differing = {
        name: (expected, graph[name])
        for name, expected in eager.items()
        if not np.array_equal(expected, graph[name], equal_nan=True)
    }
    return judge_outputs(len(eager), sum(a.nbytes for a in eager.values()), unchanged, differing)


def judge_outputs(
    count: int, total_bytes: int, unchanged: list[str], differing: dict[str, tuple[np.ndarray, np.ndarray]]
) -> OutputCheck:
    """The check of ``count`` outputs (``total_bytes`` in all) of which ``differing`` (name: eager's and
    the graph's contents, in output order) are not identical: each one within the dtype's rounding, or a
    mismatch; ``unchanged`` are those eager left as they were."""
    mismatches = []
    close_only = []
    for name, (expected, got) in differing.items():
        if expected.dtype.kind == "f":
            far = ~np.isclose(
                got, expected, rtol=ROUNDING_RTOL[expected.dtype.itemsize], atol=0, equal_nan=True
            )
            if not far.any():
                close_only.append(name)
                continue
            bad = int(np.count_nonzero(far))
        else:
            bad = int(np.count_nonzero(got != expected))
        mismatches.append(f"{name}: {bad} of {expected.size} elements differ")
    if mismatches:
        return OutputCheck(False, "graph output differs from eager: " + "; ".join(mismatches))
    detail = f"{count} buffer(s), {total_bytes} bytes identical"
    if close_only:
        detail = f"{count} buffer(s) equal; within rounding: {', '.join(close_only)}"
    if unchanged:
        detail += f"; note: eager left {', '.join(unchanged)} unchanged"
    return OutputCheck(True, detail)


def compare_reference(reference: dict[str, np.ndarray], eager: dict[str, np.ndarray]) -> OutputCheck | None:
    """Eager output against the host-computed reference of the kinds that give one (bit for bit: those
    kinds compute in the same dtype on both sides); None when no step gives one."""
    if not reference:
        return None
    mismatches = []
    for name, expected in reference.items():
        got = eager[name]
        if got.shape != expected.shape or got.dtype != expected.dtype:
            mismatches.append(
                f"{name}: {got.dtype}{list(got.shape)} against {expected.dtype}{list(expected.shape)}"
            )
        elif not np.array_equal(got, expected, equal_nan=True):
            bad = int(np.count_nonzero(got != expected))
            mismatches.append(f"{name}: {bad} of {expected.size} elements differ")
    if mismatches:
        return OutputCheck(False, "eager output differs from the host reference: " + "; ".join(mismatches))
    return OutputCheck(True, f"{len(reference)} buffer(s) equal to the host reference")


def combine_checks(graph: OutputCheck, others: dict[str, OutputCheck], graph_measured: bool) -> OutputCheck:
    """One check of a case with several graph modes: CuPy's graph's check (``graph``; it fails only where
    that graph was measured) and each other mode's, by mode. The modes whose outputs differ fail, each
    named; the detail gives every mode's."""
    failed = ["graph"] if graph.match is False and graph_measured else []
    failed += [mode for mode, check in others.items() if check.match is False]
    detail = "; ".join([f"graph: {graph.detail}", *(f"{mode}: {c.detail}" for mode, c in others.items())])
    if failed:
        return OutputCheck(False, detail, failed_modes=tuple(failed))
    matches = [graph.match, *(check.match for check in others.values())]
    return OutputCheck(None if all(m is None for m in matches) else True, detail)
