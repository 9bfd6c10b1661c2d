"""Host-level splits kept in results.json, so that a run's readers take them instead of fitting again.

The host-level rule (launchbench.measure.levels) splits a row's pass medians into one level or two.
Where that takes its mixture fit (milliseconds each; a comparison of two 1,000-case runs needs
thousands), the writer keeps the split on the mode (``ModeResult.levels``, per raw series; schema 6)
with a digest of the pass medians it was found on (``with_level_splits``, called by every write of
results.json). A reader (``series_levels``) takes a kept split whose digest matches the series as it
reads it now, and otherwise applies the rule itself: the same answer either way.

Splits are found on each raw series' pass medians in seconds; a metric of the series in another unit
(per launch, µs) takes the same split (``Levels.on``): the rule does not depend on the unit.
"""

from __future__ import annotations

import hashlib
import statistics
import struct
from collections.abc import Iterable, Iterator, Sequence

from launchbench.measure.levels import Levels, find_levels, fitted_together, needs_fit, split_levels
from launchbench.results.schema import SAMPLE_KEYS, CaseResult, LevelSplit, ModeResult, RunRecord


def medians_digest(medians: Sequence[float]) -> str:
    """16 hex digits naming a series' pass medians exactly (BLAKE2b of their IEEE 754 doubles)."""
    return hashlib.blake2b(struct.pack(f"<{len(medians)}d", *medians), digest_size=8).hexdigest()


def kept_split(result: ModeResult, key: str, medians: Sequence[float]) -> LevelSplit | None:
    """The split kept for ``key`` on this mode where it was found on these medians (its digest matches),
    names each of their passes once, sets passes apart only from a single level and puts its lowest
    level first; None otherwise."""
    split = result.levels.get(key)  # type: ignore[call-overload]
    if split is None or split.medians != medians_digest(medians):
        return None
    named = [i for members in split.levels for i in members]
    if sorted(named) != list(range(len(medians))) or any(i >= len(medians) for i in split.apart):
        return None  # not a split of these passes
    if split.apart and len(split.levels) != 1:
        return None
    centers = [statistics.median(medians[i] for i in members) for members in split.levels]
    return split if centers == sorted(centers) else None


def series_levels(
    result: ModeResult | None,
    key: str,
    medians: Sequence[float] | None = None,
    on: Sequence[float] | None = None,
) -> Levels:
    """A raw series' levels (none without passes): the kept split, or the rule's own on its pass medians
    in seconds. ``medians``: those pass medians (``result.pass_medians(key)``) where the caller has them;
    ``on``: the same passes' medians in another unit, for the levels in that unit (Levels.on)."""
    if result is None:
        return Levels(())
    medians = result.pass_medians(key) if medians is None else medians
    return levels_with(kept_split(result, key, medians), medians, on)


def levels_with(
    split: LevelSplit | None, medians: Sequence[float], on: Sequence[float] | None = None
) -> Levels:
    """A series' levels from its kept split (``kept_split``'s answer for these pass medians), or the rule's
    own where none was kept; ``on``: as in series_levels."""
    if split is None:
        found = find_levels(medians)
        return found if on is None else found.on(on)
    return split_levels(medians if on is None else on, split.levels, split.apart)


def fit_needed(result: ModeResult, key: str, medians: Sequence[float]) -> bool:
    """Whether the levels of this series (its pass medians ``medians``) take the rule's mixture fit: no
    split was kept for it and the rule needs one."""
    values = tuple(medians)
    return kept_split(result, key, values) is None and needs_fit(values)


def fits_to_make(
    results: Iterable[ModeResult], keys: Iterable[str] = SAMPLE_KEYS
) -> Iterator[tuple[float, ...]]:
    """The pass medians of every series (of ``keys``) of ``results`` that needs the rule's fit and has no
    split kept."""
    keys = tuple(keys)
    for result in results:
        for key in keys:
            medians = tuple(result.pass_medians(key))
            if fit_needed(result, key, medians):
                yield medians


def _split(levels: Levels, medians: Sequence[float]) -> LevelSplit:
    return LevelSplit(
        medians=medians_digest(medians),
        levels=[list(level.passes) for level in levels.levels],
        apart=list(levels.apart),
    )


def mode_with_splits(result: ModeResult) -> ModeResult:
    """The mode with a split kept for each series whose levels take the rule's fit (and no other)."""
    splits = {}
    for key in SAMPLE_KEYS:
        medians = result.pass_medians(key)
        if needs_fit(tuple(medians)):
            splits[key] = _split(series_levels(result, key), medians)
    return result if splits == result.levels else result.model_copy(update={"levels": splits})


def _case_with_splits(case: CaseResult) -> CaseResult:
    modes = {name: mode_with_splits(result) for name, result in case.modes.items()}
    same = all(modes[name] is result for name, result in case.modes.items())
    return case if same else case.model_copy(update={"modes": modes})


def with_level_splits(record: RunRecord) -> RunRecord:
    """The record with every mode's splits kept for its series as they stand (the fits it lacks made
    together: measure.levels.fitted_together)."""
    results = [result for case in record.cases for result in case.modes.values()]
    with fitted_together(fits_to_make(results)):
        cases = [_case_with_splits(case) for case in record.cases]
    same = all(new is old for new, old in zip(cases, record.cases, strict=True))
    return record if same else record.model_copy(update={"cases": cases})
