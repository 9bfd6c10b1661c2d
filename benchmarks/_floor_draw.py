"""How far the draw of processes moves a floor fidelity row (benchmarks/floor_fidelity.py).

A fidelity run holds a dozen or so processes a side, and on a host whose level moves from one process to
the next, which processes a run happened to get sets much of a row's ratio. This module resamples the
processes, never the values inside one: each resample draws, with replacement, as many launchbench floor
processes as the run had and as many reference processes, and applies the row's own rule (the floor
state's ratio of medians) to what it drew. The 2.5th and 97.5th percentiles of those ratios are the
row's interval: inside ±TOLERANCE, the row is within whatever the draw; wholly outside, it is outside
whatever the draw; straddling the bound, this many processes cannot decide it on this host. The floor
rule leans on each side's lowest values, for which a bootstrap is only a rough guide: the interval says
how much the row would move with other processes like these, not a coverage probability.

It also recovers how many values each floor process gave in runs recorded before fidelity.json kept
those counts, from the floor runs' results.json files in fidelity-logs.tar.gz.
"""

from __future__ import annotations

import random
import re
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

Key = tuple[str, str, int | None]
Values = dict[Key, list[float]]
Counts = dict[Key, list[int]]
RESAMPLES = 2000
SEED = 20261202
EXTRACT = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # no links or devices out of a log


@dataclass(frozen=True)
class Draw:
    """One floor row under resampled processes: its ratio as run, the 95% interval, the processes a side."""

    layer: str
    mode: str
    args: int | None
    ratio: float
    low: float
    high: float
    ours_processes: int
    reference_processes: int
    reads: str  # "within", "outside" or "undecided"


def cut(values: list[float], counts: list[int]) -> list[list[float]]:
    """``values`` cut into each process's values, ``counts`` in order (their sum must be the length)."""
    if sum(counts) != len(values):
        raise ValueError(f"{len(values)} values, but the processes' counts add up to {sum(counts)}")
    out, start = [], 0
    for n in counts:
        out.append(values[start : start + n])
        start += n
    return [p for p in out if p]


def interval(
    ours: list[list[float]],
    refs: list[list[float]],
    ratio_of: Callable[[list[float], list[float]], float],
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``ratio_of`` over resamples of both sides' processes."""
    rng = random.Random(seed)
    ratios = sorted(
        ratio_of(
            [v for p in rng.choices(ours, k=len(ours)) for v in p],
            [v for p in rng.choices(refs, k=len(refs)) for v in p],
        )
        for _ in range(resamples)
    )
    return ratios[int(0.025 * (resamples - 1))], ratios[int(0.975 * (resamples - 1))]


def reading(low: float, high: float, tolerance: float) -> str:
    if 1 - tolerance <= low and high <= 1 + tolerance:
        return "within"
    if high < 1 - tolerance or low > 1 + tolerance:
        return "outside"
    return "undecided"


def draws(
    keys: list[Key],
    ours: Values,
    ours_counts: Counts,
    ref_processes: Callable[[Key], list[list[float]]],
    ratio_of: Callable[[list[float], list[float]], float],
    tolerance: float,
) -> list[Draw]:
    """Every key whose floor processes' counts are known and that has two processes a side or more."""
    out = []
    for key in keys:
        if key not in ours_counts:
            continue
        mine, theirs = cut(ours[key], ours_counts[key]), ref_processes(key)
        if min(len(mine), len(theirs)) < 2:
            continue
        flat = ratio_of([v for p in mine for v in p], [v for p in theirs for v in p])
        low, high = interval(mine, theirs, ratio_of)
        out.append(Draw(*key, flat, low, high, len(mine), len(theirs), reading(low, high, tolerance)))
    return out


def render(found: list[Draw], tolerance: float) -> str:
    """The section of fidelity.md: a row per floor row, and how many read each way."""
    if not found:
        return ""
    lines = [
        "## The draw of processes",
        "",
        f"Each floor row again, its processes resampled ({RESAMPLES} draws with replacement, as many "
        "processes a side as the run had; the values of one process stay together): the 2.5th and 97.5th "
        f"percentiles of the floor ratio. Inside ±{tolerance:.0%}: within whatever the draw; wholly "
        "outside: outside whatever the draw; across the bound: undecided with this many processes on "
        "this host. A rough guide, the floor rule leaning on each side's lowest values.",
        "",
        "| layer | mode | args | ratio | 95% interval | processes (launchbench / reference) | reads |",
        "| --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for d in found:
        args = "—" if d.args is None else d.args
        lines.append(
            f"| {d.layer} | {d.mode} | {args} | {d.ratio:.3f} | {d.low:.3f}–{d.high:.3f} | "
            f"{d.ours_processes} / {d.reference_processes} | {d.reads} |"
        )
    counts = {name: sum(d.reads == name for d in found) for name in ("within", "outside", "undecided")}
    lines += [
        "",
        f"{counts['within']} of {len(found)} floor rows within ±{tolerance:.0%} whatever the draw, "
        f"{counts['outside']} outside whatever the draw, {counts['undecided']} undecided.",
    ]
    return "\n".join(lines) + "\n"


def counts_from_logs(out: Path, ours: Values, values_of: Callable[[Path], Values], digits: int = 4) -> Counts:
    """Each key's values per floor process, from ``out``/fidelity-logs.tar.gz's floor-rN/results.json
    (rounds in order, read by ``values_of``): only for keys whose values, rounded as fidelity.json rounds
    them, are exactly what those runs give one after another; empty where the logs are absent."""
    logs = out / "fidelity-logs.tar.gz"
    if not logs.is_file():
        return {}
    with tempfile.TemporaryDirectory() as work, tarfile.open(logs) as tar:
        members = [m for m in tar.getmembers() if re.search(r"floor-r\d+/results\.json$", m.name)]
        tar.extractall(work, members=members, **EXTRACT)
        dirs = sorted((Path(work) / m.name).parent for m in members)
        per_run = [values_of(d) for d in sorted(dirs, key=lambda d: int(d.name.split("-r")[-1]))]
    counts: Counts = {}
    for key, recorded in ours.items():
        joined = [round(v, digits) for run in per_run for v in run.get(key, [])]
        if joined == [round(v, digits) for v in recorded]:
            counts[key] = [len(run[key]) for run in per_run if key in run]
    return counts
