"""Host levels of a run's rows, and what the launching thread ran on at each level.

A row's levels come from its pass medians (launchbench.measure.levels: the rule and its constants),
each raw series' split found once on its pass medians in seconds, or taken from results.json where it
was kept there (launchbench.results.level_splits), and applied to the metric's unit: results.csv
carries them (the level columns of launchbench.analysis.columns), the run summary names the rows at two levels or with passes apart
(``level_lines``), and ``compare`` notes rows at two levels per metric (``comparison_note``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from launchbench.analysis.columns import LEVEL_METRICS
from launchbench.measure.levels import Level, Levels
from launchbench.results.level_splits import series_levels
from launchbench.results.schema import METRIC_BY_NAME, CaseResult, ModeResult, RunRecord

SHARE_NOTE = 0.2  # two sides whose low-level shares differ by this much mix their levels differently


def metric_levels(case: CaseResult, mode: str, metric: str) -> Levels:
    """A row's levels of one metric, in the metric's unit (none without passes)."""
    result = case.modes.get(mode)  # type: ignore[call-overload]
    if result is None:
        return Levels(())
    m = METRIC_BY_NAME[metric]
    scale = m.scale(case.launches_per_iter)
    medians = result.pass_medians(m.sample_key)
    return series_levels(result, m.sample_key, medians, on=[v * scale for v in medians])


def _level_text(level: Level, total: int) -> str:
    spread = f", {level.low:.3g}–{level.high:.3g}" if level.count > 1 else ""
    return f"{level.center:.3g} µs ({level.count} of {total} passes{spread})"


def describe_levels(levels: Levels) -> str:
    """'two levels: 4.47 µs (2 of 6 passes, 4.43–4.52) and …', or one level with passes apart; '' for
    one level and nothing apart."""
    total = sum(level.count for level in levels.levels)
    if levels.two:
        return "two levels: " + " and ".join(_level_text(level, total) for level in levels.levels)
    if levels.apart:
        return f"one level; {len(levels.apart)} of {total} passes sit apart (passes {_numbers(levels.apart)})"
    return ""


def _numbers(passes: Sequence[int]) -> str:
    return ", ".join(str(i + 1) for i in passes)


@dataclass(frozen=True)
class LevelHost:
    """What the launching thread ran on in a level's passes (as each pass began)."""

    cpus: tuple[int, ...]
    nodes: tuple[int, ...]
    mhz: float | None  # the median of the passes' readings
    governors: tuple[str, ...]
    gpu_nodes: tuple[int, ...]

    def text(self) -> str:
        parts = []
        if self.cpus:
            parts.append(f"CPU {', '.join(map(str, self.cpus))}")
        if self.nodes:
            parts.append(f"node {', '.join(map(str, self.nodes))}")
        if self.mhz is not None:
            parts.append(f"{self.mhz:.0f} MHz")
        if self.governors:
            parts.append("/".join(self.governors))
        if self.gpu_nodes:
            parts.append(f"GPU node {', '.join(map(str, self.gpu_nodes))}")
        return " ".join(parts)


def level_host(result: ModeResult, passes: Sequence[int]) -> LevelHost:
    """The host facts of some passes of a mode (indices into its passes)."""
    hosts = [result.passes[i].host for i in passes if i < len(result.passes)]
    starts = [h.start for h in hosts if h.start is not None]
    mhz = [p.mhz for p in starts if p.mhz is not None]
    return LevelHost(
        cpus=tuple(sorted({p.cpu for p in starts if p.cpu is not None})),
        nodes=tuple(sorted({p.node for p in starts if p.node is not None})),
        mhz=statistics.median(mhz) if mhz else None,
        governors=tuple(sorted({p.governor for p in starts if p.governor})),
        gpu_nodes=tuple(sorted({h.gpu_node for h in hosts if h.gpu_node is not None})),
    )


def _row_line(case: CaseResult, mode: str, result: ModeResult) -> str | None:
    """The row's first level metric at two levels, in full, with the other metrics at two levels."""
    two = [(m, levels) for m in LEVEL_METRICS if (levels := metric_levels(case, mode, m)).two]
    if not two:
        return None
    metric, levels = two[0]
    pooled = float(statistics.median(case.metric_samples(mode, metric)))
    hosts = [level_host(result, level.passes).text() for level in levels.levels]
    line = f"[{mode}] {metric}: {describe_levels(levels)}; pooled median {pooled:.3g}"
    if any(hosts):  # results recorded without host places have none
        line += f"; low: {hosts[0] or '—'}; high: {hosts[1] or '—'}"
    others = [m for m, _ in two[1:]]
    return line + (f"; also at two levels: {', '.join(others)}" if others else "")


def level_lines(run: RunRecord) -> list[str]:
    """One line per row at two levels (its first level metric's levels, the pooled median they
    replace, and per level what the launching thread ran on), one per case given added passes, and one
    counting the row-metrics with passes apart from their one level."""
    lines = []
    apart = 0
    for case in run.cases:
        where = f"{case.scenario} {case.case_id}" if len(run.scenarios) > 1 else case.case_id
        if case.extra_passes:
            lines.append(
                f"{where}: {case.extra_passes} pass(es) added for its levels ({case.passes_done} in all)"
            )
        for mode, result in case.modes.items():
            line = _row_line(case, mode, result)
            if line is not None:
                lines.append(f"{where} {line}")
            apart += sum(bool(metric_levels(case, mode, m).apart) for m in LEVEL_METRICS)
    if apart:
        lines.append(
            f"{apart} row-metric(s) with passes apart from their one level (results.csv *_passes_apart)"
        )
    return lines


def comparison_note(baseline: Levels, current: Levels) -> str:
    """compare's note on one row-metric whose levels matter: each side's levels, and whether the sides
    mix them differently (then the verdict may reflect the level shares rather than a change)."""
    if not (baseline.two or baseline.apart or current.two or current.apart):
        return ""  # one level and nothing apart on both sides: describe_levels says nothing of either
    sides = [
        (name, describe_levels(levels)) for name, levels in (("baseline", baseline), ("current", current))
    ]
    note = "; ".join(f"{name} {text or 'one level'}" for name, text in sides)
    if _mixed_differently(baseline, current):
        note += "; the sides mix levels differently: the verdict may reflect level shares"
    return note


def _mixed_differently(baseline: Levels, current: Levels) -> bool:
    if baseline.two != current.two:
        return True
    if not baseline.two:
        return False
    return math.fabs(baseline.levels[0].share - current.levels[0].share) >= SHARE_NOTE
