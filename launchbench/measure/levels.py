"""Host levels: whether one row's pass medians sit at one level or at two.

The unit is the pass (a fresh worker process): a process can land at one of two speeds and keep it for
its whole life, so a row's passes can form two clusters whose pooled median describes neither. The
rule (docs/statistics.md, "Host levels"):

1. Fewer than MIN_PASSES pass medians, or all of them within MIN_SEPARATION of each other: one level.
2. On the logs of the pass medians, a Gaussian mixture with one and with two components (one variance
   shared by both; the two started from the split at the widest gap), fitted as scikit-learn's
   GaussianMixture(covariance_type="tied") fits it (launchbench.measure.mixture), compared by BIC:
   the gain is BIC(one) − BIC(two). The one-component fit is its first M-step whatever the start, so
   its BIC is taken in closed form (``mixture.one_component_bic``).
3. Each pass goes to its likelier component; the components' centers (the median of their passes'
   medians) must be at least MIN_SEPARATION apart, or it is one level.
4. Two levels when the gain exceeds BIC_MARGIN (6: "strong" evidence on Kass & Raftery's scale) and
   each component holds at least MIN_LEVEL_PASSES passes. A single pass is never a level.
5. Otherwise, with a gain above SAMPLE_MARGIN, one level with the smaller component's passes named as
   sitting apart (``Levels.apart``): a possible second level that the passes so far cannot show.

Step 3 can end in one level before any fit: where even the split of the sorted pass medians that
pulls the two groups' medians furthest apart, for every size of the lower group, leaves them under
MIN_SEPARATION apart, no grouping the mixture could give passes step 3 (``splits_stay_close``), and
the row is one level without the fit.

A row with passes apart, or with two levels one of which holds fewer than ENOUGH_PASSES passes, asks
for more passes (``Levels.wants_passes``); the runner adds them up to its cap
(launchbench.run.extra_passes). Here, below the run layer, because the runner uses it; never prints.
"""

from __future__ import annotations

import contextlib
import functools
import math
import statistics
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from launchbench.measure.mixture import fit_two, one_component_bic

MIN_PASSES = 4  # fewer pass medians: one level, no test
MIN_SEPARATION = 0.05  # two levels' centers at least 5% apart
BIC_MARGIN = 6.0  # two levels are reported when two components lower the BIC by more than this
SAMPLE_MARGIN = 2.0  # more passes are asked for when they lower it by more than this
MIN_LEVEL_PASSES = 2  # a cluster of fewer passes is an outlying pass, not a level
ENOUGH_PASSES = 3  # K: a level (or an outlying pass) seen in fewer passes asks for more
REG_COVAR = 1e-6  # added to the variance (log units: a 0.1% spread), so identical passes fit
# fewer fits than this are made in the caller's process: a fit takes about 0.2 ms, a pool's start about
# 0.3 s (on the 2-core CPU machine, 256 fits: 0.055 s here, 0.35 s in a fresh pool; 4,096: 0.93 s here)
PARALLEL_FITS = 2048


@dataclass(frozen=True)
class Level:
    """One level of a row: the median of its passes' medians (``center``), their lowest and highest
    (``low``, ``high``), its share of the row's passes and which passes (indices, in run order)."""

    center: float
    low: float
    high: float
    share: float
    passes: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.passes)


@dataclass(frozen=True)
class Levels:
    """A row's levels, lowest first (one or two; none without passes), and the passes that sit apart
    from its one level without the evidence or the count of a level of their own (``apart``)."""

    levels: tuple[Level, ...]
    apart: tuple[int, ...] = ()

    @property
    def count(self) -> int:
        return len(self.levels)

    @property
    def two(self) -> bool:
        return len(self.levels) == 2

    @property
    def wants_passes(self) -> bool:
        """Passes apart from the one level, or two levels one of which holds fewer than ENOUGH_PASSES."""
        return bool(self.apart) or (self.two and min(level.count for level in self.levels) < ENOUGH_PASSES)

    def on(self, values: Sequence[float]) -> Levels:
        """The same passes at the same levels, each level's center, low and high taken from ``values``
        (the same passes' medians in another unit: the rule's outcome does not depend on the unit)."""
        return split_levels(values, [level.passes for level in self.levels], self.apart)


def _level(values: Sequence[float], members: Sequence[int], total: int) -> Level:
    chosen = sorted([values[i] for i in members])  # sorted once: the median and both ends read off it
    half = len(chosen) // 2  # the median as statistics.median takes it: the middle, or its two's mean
    center = chosen[half] if len(chosen) % 2 else (chosen[half - 1] + chosen[half]) / 2
    return Level(
        center=center, low=chosen[0], high=chosen[-1], share=len(members) / total, passes=tuple(members)
    )


def split_levels(
    values: Sequence[float], groups: Sequence[Sequence[int]], apart: Sequence[int] = ()
) -> Levels:
    """The levels of ``values`` whose passes ``groups`` holds level by level (indices, lowest level
    first), with ``apart`` the passes apart from a single level: how the rule reports a split it made."""
    return Levels(tuple(_level(values, members, len(values)) for members in groups), tuple(apart))


def one_level(values: Sequence[float], apart: Sequence[int] = ()) -> Levels:
    """Every pass at one level (``apart``: passes that sit apart without forming a level)."""
    return Levels((_level(values, range(len(values)), len(values)),), tuple(apart))


def _two_components(logs: np.ndarray) -> tuple[np.ndarray, float]:
    """Each value's likelier component under the two-component mixture, and by how much two components
    lower the BIC below one."""
    start = widest_gap_start(logs)
    two = fit_two(logs, start.weights, start.means, start.precision, REG_COVAR)
    return two.labels, one_component_bic(logs, REG_COVAR) - two.bic


@dataclass(frozen=True)
class MixtureStart:
    """Where the two-component fit starts: each component's weight and mean, and the shared precision."""

    weights: np.ndarray
    means: np.ndarray
    precision: float


def widest_gap_start(logs: np.ndarray) -> MixtureStart:
    """The two components' start: the split of the sorted values at their widest gap."""
    ordered = np.sort(logs)
    cut = int(np.argmax(np.diff(ordered))) + 1
    parts = (ordered[:cut], ordered[cut:])
    within = sum(float(np.sum((part - part.mean()) ** 2)) for part in parts) / len(logs) + REG_COVAR
    return MixtureStart(
        weights=np.array([len(part) / len(logs) for part in parts]),
        means=np.array([float(part.mean()) for part in parts]),
        precision=1 / within,
    )


def splits_stay_close(values: Sequence[float]) -> bool:
    """Whether every division of ``values`` into two non-empty groups leaves the groups' medians less
    than MIN_SEPARATION apart (step 3's test, with its expression), checked on the n − 1 splits of the
    sorted values. Exact: among groupings whose lower-median group holds k values, that group's median
    is least when it holds the k smallest values and the other's greatest when it holds the rest (a
    median cannot fall when its values rise), so these splits are the furthest apart of each size."""
    ordered = sorted(values)
    return all(
        statistics.median(ordered[cut:]) < (1 + MIN_SEPARATION) * statistics.median(ordered[:cut])
        for cut in range(1, len(ordered))
    )


def find_levels(pass_medians: Sequence[float]) -> Levels:
    """One row's levels from its pass medians (any unit; positive and finite, in run order)."""
    return _find_levels(tuple(float(v) for v in pass_medians))


KEPT_FITS = 1 << 16  # mixture fits kept in this process (the oldest dropped first beyond it)
_FITS: dict[tuple[float, ...], Levels] = {}  # each fit made here or in fitted_together's workers


@functools.lru_cache(maxsize=1 << 16)  # a run's tables, its summary and results.json ask about the same rows
def _find_levels(values: tuple[float, ...]) -> Levels:
    if not needs_fit(values):  # too few passes, or step 3 would end in one level whatever the fit gave
        return one_level(values) if values else Levels(())
    known = _FITS.get(values)
    return known if known is not None else _keep_fit(values, fitted_levels(values))


def _keep_fit(values: tuple[float, ...], levels: Levels) -> Levels:
    _FITS[values] = levels
    if len(_FITS) > KEPT_FITS:
        del _FITS[next(iter(_FITS))]
    return levels


def forget_levels() -> None:
    """Drop every answer and fit kept so far (the next find_levels of any series decides, and fits, anew)."""
    _find_levels.cache_clear()
    needs_fit.cache_clear()
    _FITS.clear()


@functools.lru_cache(maxsize=1 << 16)  # asked of one series by the fits to make together and by find_levels
def needs_fit(values: tuple[float, ...]) -> bool:
    """Whether find_levels would fit a mixture to these pass medians (steps 1 and 3 do not decide)."""
    if len(values) < MIN_PASSES or not all(math.isfinite(v) and v > 0 for v in values):
        return False
    return not splits_stay_close(values)  # some split of the sorted values is MIN_SEPARATION apart


@contextlib.contextmanager
def fitted_together(
    series: Iterable[Sequence[float]], jobs: int = -1, least: int | None = None
) -> Iterator[int]:
    """Inside the block, find_levels answers each of ``series`` (rows' pass medians) that needs a
    mixture fit not made before from a fit made on entry, all of them at once in worker processes
    (joblib's, ``jobs`` of them, -1: one per CPU) where at least ``least`` (by default PARALLEL_FITS)
    such fits are needed; fewer are left to find_levels. The fits are kept after the block, as
    find_levels keeps its own.
    The same deterministic fits, seeded alike, so every answer is what find_levels gives alone. Yields
    how many fits were made on entry."""
    wanted = list(dict.fromkeys(tuple(float(v) for v in one) for one in series))
    fits = [values for values in wanted if values not in _FITS and needs_fit(values)]
    if len(fits) < (PARALLEL_FITS if least is None else least):
        yield 0
        return
    from joblib import Parallel, delayed

    found = Parallel(n_jobs=jobs)(delayed(fitted_levels)(values) for values in fits)
    for values, levels in zip(fits, found, strict=True):
        _keep_fit(values, levels)
    yield len(fits)


def fitted_levels(values: tuple[float, ...]) -> Levels:
    """Steps 2 to 5 of the rule: the mixture fit and what follows from it (at least MIN_PASSES positive,
    finite values)."""
    labels, gain = _two_components(np.log(np.asarray(values)))
    groups = [[i for i, label in enumerate(labels) if label == k] for k in (0, 1)]
    if gain <= SAMPLE_MARGIN or not all(groups):
        return one_level(values)
    groups.sort(key=lambda members: statistics.median(values[i] for i in members))
    low, high = (statistics.median(values[i] for i in members) for members in groups)
    if high < (1 + MIN_SEPARATION) * low:
        return one_level(values)
    small = min(groups, key=len)
    if gain <= BIC_MARGIN or len(small) < MIN_LEVEL_PASSES:
        return one_level(values, small)
    return Levels(tuple(_level(values, members, len(values)) for members in groups))
