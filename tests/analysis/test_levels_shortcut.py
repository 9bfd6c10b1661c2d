"""The host-level rule's shortcut (measure.levels.splits_stay_close): where it ends a row at one level
before the mixture fit, the fit would have given that one level too, on every committed run's pass
medians and on synthetic two-level data; the splits it checks are the furthest apart of all groupings;
and a shortcut that is wrong is caught by the same check. And the fit itself (NumPy) against
scikit-learn's on every committed row it reaches."""

from __future__ import annotations

import functools
import itertools
import statistics
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from committed_runs import committed_record, committed_results
from mixture_reference import CLOSE, sklearn_two

from launchbench.measure import levels, mixture
from launchbench.measure.levels import MIN_PASSES, MIN_SEPARATION, Levels, one_level, splits_stay_close
from launchbench.measure.levels import fitted_levels as _fitted_levels

Shortcut = Callable[[Sequence[float]], bool]


@functools.lru_cache(maxsize=1)
def committed_inputs() -> tuple[tuple[float, ...], ...]:
    """Every distinct series of pass medians in the committed runs that reaches the mixture fit without
    the shortcut (at least MIN_PASSES passes, spread over MIN_SEPARATION)."""
    found: set[tuple[float, ...]] = set()
    for path in committed_results():
        for case in committed_record(path).cases:
            for mode in case.modes.values():
                for key in sorted({k for p in mode.passes for k in p.samples}):
                    found.add(tuple(mode.pass_medians(key)))
    return tuple(
        sorted(v for v in found if len(v) >= MIN_PASSES and not max(v) < (1 + MIN_SEPARATION) * min(v))
    )


@functools.cache
def fitted_levels(values: tuple[float, ...]) -> Levels:
    """The mixture fit's answer (levels.fitted_levels), computed once per series: the fit is seeded, so
    the same pass medians always give the same answer, and the tests here ask about the same series
    again and again (the committed runs' and two_level_inputs', shortcut by shortcut)."""
    return _fitted_levels(values)


def wrong_calls(shortcut: Shortcut, inputs: Sequence[tuple[float, ...]]) -> list[tuple[float, ...]]:
    """The inputs the shortcut ends at one level whose fit says otherwise (two levels, or passes apart)."""
    return [v for v in inputs if shortcut(v) and fitted_levels(v) != one_level(v)]


def two_level_inputs(count: int) -> list[tuple[float, ...]]:
    """Pass medians from two levels 2–12% apart, 4–10 passes, a spread within a level of 0.5–3%."""
    rng = np.random.default_rng(26)
    out = []
    for _ in range(count):
        n = int(rng.integers(MIN_PASSES, 11))
        high = rng.random(n) < rng.uniform(0.15, 0.85)
        centers = np.where(high, 1 + rng.uniform(0.02, 0.12), 1.0)
        out.append(
            tuple(float(v) for v in 5.0 * centers * np.exp(rng.normal(0, rng.uniform(0.005, 0.03), n)))
        )
    return [v for v in out if not max(v) < (1 + MIN_SEPARATION) * min(v)]


def test_the_shortcut_agrees_with_the_fit_on_every_committed_run():
    inputs = committed_inputs()
    taken = [v for v in inputs if splits_stay_close(v)]
    assert len(inputs) > 1000 and len(taken) > 50  # the committed runs reach the fit and the shortcut
    assert wrong_calls(splits_stay_close, inputs) == []


def test_the_fit_is_scikit_learns_on_the_committed_rows_that_reach_it():
    """Each pass's component and the two-component fit's BIC, NumPy's fit against scikit-learn's from
    the same start, on every fifth committed row that reaches the fit (sorted; 692 of 3,460, at 1.4 ms
    a scikit-learn fit), within mixture_reference.CLOSE."""
    fitted = [v for v in committed_inputs() if not splits_stay_close(v)][::5]
    assert len(fitted) > 500
    differ = []
    for values in fitted:
        logs = np.log(np.asarray(values))
        start = levels.widest_gap_start(logs)
        two = mixture.fit_two(logs, start.weights, start.means, start.precision, levels.REG_COVAR)
        expected_labels, expected_bic = sklearn_two(logs)
        if two.labels.tolist() != expected_labels or two.bic != pytest.approx(expected_bic, **CLOSE):
            differ.append(values)
    assert differ == []


def test_the_shortcut_agrees_with_the_fit_on_two_level_data():
    inputs = two_level_inputs(600)
    assert sum(map(splits_stay_close, inputs)) > 30
    assert sum(fitted_levels(v).two for v in inputs) > 30  # the data holds rows the fit splits
    assert wrong_calls(splits_stay_close, inputs) == []


def test_find_levels_gives_the_fits_answer_where_the_shortcut_is_not_taken():
    for values in two_level_inputs(150):
        assert levels.find_levels(values) == fitted_levels(values)


def test_a_wrong_shortcut_is_caught():
    """Checking only the middle split, or a looser separation, ends rows the fit splits."""

    def middle_split(values: Sequence[float]) -> bool:
        ordered, cut = sorted(values), len(values) // 2
        return statistics.median(ordered[cut:]) < (1 + MIN_SEPARATION) * statistics.median(ordered[:cut])

    def looser(values: Sequence[float]) -> bool:
        ordered = sorted(values)
        return all(
            statistics.median(ordered[c:]) < 1.08 * statistics.median(ordered[:c])
            for c in range(1, len(ordered))
        )

    assert wrong_calls(middle_split, committed_inputs()) != []
    assert wrong_calls(looser, two_level_inputs(600)) != []


def test_find_levels_with_a_wrong_shortcut_differs_from_the_fit(monkeypatch):
    def loose(values: Sequence[float]) -> bool:
        return max(values) < 1.08 * min(values)

    monkeypatch.setattr(levels, "splits_stay_close", loose)
    levels.forget_levels()
    try:
        assert any(levels.find_levels(v) != fitted_levels(v) for v in two_level_inputs(600))
    finally:
        levels.forget_levels()


def all_groupings_close(values: Sequence[float]) -> bool:
    """Step 3's test on every division of the values into two non-empty groups."""
    n = len(values)
    for size in range(1, n):
        for members in itertools.combinations(range(n), size):
            rest = [values[i] for i in range(n) if i not in members]
            low, high = sorted((statistics.median(values[i] for i in members), statistics.median(rest)))
            if not high < (1 + MIN_SEPARATION) * low:
                return False
    return True


@pytest.mark.parametrize("seed", range(4))
def test_the_sorted_splits_decide_as_every_grouping_does(seed):
    rng = np.random.default_rng(seed)
    close = 0
    for _ in range(150):
        n = int(rng.integers(MIN_PASSES, 9))
        values = tuple(float(v) for v in 5.0 * np.exp(rng.normal(0, rng.uniform(0.01, 0.05), n)))
        assert splits_stay_close(values) == all_groupings_close(values), values
        close += splits_stay_close(values)
    assert 20 < close < 130  # both answers are tested
