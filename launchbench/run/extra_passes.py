"""Passes added to a case whose host levels the planned passes cannot show.

After the planned passes, each case's rows are read for host levels (launchbench.measure.levels, on
the pass medians of the wall time): a row with passes sitting apart from its one level, or with two
levels one of which holds fewer than ENOUGH_PASSES passes, gets its case one more pass in a fresh
worker process, round after round, until no row asks or the case has run EXTRA_PASS_FACTOR times its
planned passes (or its scenario's ``measure.added_passes`` beyond them). A row whose one level has a
single pass apart stops asking once APART_PASSES passes have been added without another joining it
(``row_asks``; benchmarks/added_passes_study.py gives what that costs in levels found and saves in
passes). Each added pass is marked (``CaseResult.extra_passes``), so the run records that it added
them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from launchbench.measure.levels import ENOUGH_PASSES, MIN_PASSES, Levels, find_levels
from launchbench.results.schema import MEASURED_STATUSES, WALL, CaseResult, RunRecord
from launchbench.scenario.core import Case

EXTRA_PASS_FACTOR = 2  # a case runs at most this many times its planned passes
APART_PASSES = 2  # passes added for a single pass apart before the row takes it for a one-off


def pass_cap(case: Case) -> int:
    """The most passes a case runs, planned and added together: its ``added_passes`` beyond the planned
    ones where the scenario sets it, else EXTRA_PASS_FACTOR times the planned ones."""
    planned, added = case.measure.passes, case.measure.added_passes
    return EXTRA_PASS_FACTOR * planned if added is None else planned + added


def below_cap(case: Case, passes_done: int) -> bool:
    """Whether a case that has run ``passes_done`` passes may get another: its planned ones are done and
    its cap is not reached."""
    return case.measure.passes <= passes_done < pass_cap(case)


def at_cap(case: Case, passes_done: int) -> bool:
    """Whether a case that has run ``passes_done`` passes has reached its cap (``pass_cap``)."""
    return passes_done >= pass_cap(case)


def may_follow(cases: Sequence[Case], pass_index: int) -> bool:
    """Whether a pass could be added after pass ``pass_index``: some case has run its planned passes by
    then, is below its cap, and has the passes a host-level fit needs (fewer ask for none)."""
    done = pass_index + 1
    return done >= MIN_PASSES and any(below_cap(case, done) for case in cases)


def row_asks(levels: Levels, added: int, apart_passes: int = APART_PASSES) -> bool:
    """Whether a row at ``levels`` asks for another pass once ``added`` passes have been added to its
    case: its levels want passes, unless all they want is to see whether a single pass apart from one
    level recurs, and ``apart_passes`` added passes have not seen it again."""
    if not levels.wants_passes:
        return False
    return levels.two or len(levels.apart) > 1 or added < apart_passes


def wanting_row(result: CaseResult, planned: int) -> str | None:
    """Why the case needs another pass (its first row whose levels ask for one), or None; ``planned``:
    the case's planned passes."""
    for mode, one in result.modes.items():
        if one.status not in MEASURED_STATUSES:
            continue
        levels = find_levels(one.pass_medians(WALL))
        if not row_asks(levels, result.passes_done - planned):
            continue
        if levels.two:
            fewest = min(level.count for level in levels.levels)
            return f"{mode} wall time sits at two levels, one in {fewest} of {len(one.passes)} passes (want {ENOUGH_PASSES})"
        return f"{mode} wall time: {len(levels.apart)} of {len(one.passes)} passes sit apart from the rest"
    return None


def _asking(
    cases: Sequence[Case], record: RunRecord, considered: Callable[[Case, int], bool]
) -> Iterator[tuple[Case, int, str]]:
    """(case, passes done, why) for every case that has not failed, is ``considered`` at the passes it
    has run, and has a row that asks for a pass."""
    for case in cases:
        result = record.case(case.scenario, case.case_id)
        if result is None or result.error or not considered(case, result.passes_done):
            continue
        why = wanting_row(result, case.measure.passes)
        if why is not None:
            yield case, result.passes_done, why


def extra_passes(cases: Sequence[Case], record: RunRecord) -> list[tuple[Case, int, str]]:
    """The next round of added passes: (case, pass index, why) for every case whose planned passes are
    done, that has not failed, is below its cap and has a row that asks for a pass."""
    return list(_asking(cases, record, below_cap))


def capped_asks(cases: Sequence[Case], record: RunRecord) -> list[tuple[Case, str]]:
    """The cases whose rows still ask for a pass but have reached their cap (``pass_cap``), with why: the
    run says so once it has measured everything, so a capped ``measure.added_passes`` is not silent."""
    return [(case, why) for case, _, why in _asking(cases, record, at_cap)]


def marked(result: CaseResult, case: Case, pass_index: int) -> CaseResult:
    """A pass's result, marked as added when it lies beyond the case's planned passes."""
    return result.model_copy(update={"extra_passes": 1}) if pass_index >= case.measure.passes else result
