"""Host-level splits kept in results.json (launchbench.results.level_splits): written with every run,
taken by its readers without a fit, and never taken where they do not describe the series as read."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from builders import make_run

from launchbench.analysis.compare import compare_runs
from launchbench.analysis.evidence import RowSeries
from launchbench.analysis.host_levels import metric_levels
from launchbench.analysis.table import run_table
from launchbench.measure import levels as levels_module
from launchbench.measure.levels import find_levels, split_levels
from launchbench.report.comparison_table import records
from launchbench.results.level_splits import (
    fits_to_make,
    kept_split,
    medians_digest,
    series_levels,
    with_level_splits,
)
from launchbench.results.metrics import SampleKey
from launchbench.results.schema import SAMPLE_KEYS, WALL, LevelSplit, ModePass, ModeResult, RunRecord
from launchbench.results.store import load_run, write_run

TWO_LEVELS = [4.43, 6.10, 4.52, 6.43, 6.35, 4.49]  # µs per launch, pass by pass: two host levels


def leveled(result: ModeResult, values_us: list[float], launches: int) -> ModeResult:
    """The mode with one pass per value, its samples near value × launches (µs → s per iteration)."""
    one = result.passes[0]
    passes = [
        ModePass(
            iters_per_sample=1,
            samples={
                key: [v * 1e-6 * launches * (1 + 0.001 * (k - 2)) for k in range(5)] for key in one.samples
            },
        )
        for v in values_us
    ]
    return ModeResult(mode=result.mode, status="ok", passes=passes)


def two_level_run(factor: float = 1.0) -> RunRecord:
    """A quickstart run whose every eager row sits at two host levels (each row's own values)."""
    run = make_run(passes=2)
    cases = []
    for i, case in enumerate(run.cases):
        values = [v * factor * (1 + 0.01 * i) for v in TWO_LEVELS]
        eager = leveled(case.modes["eager"], values, case.launches_per_iter)
        graph = leveled(case.modes["graph"], [0.5] * len(values), case.launches_per_iter)
        modes = {"eager": eager, "graph": graph}
        cases.append(case.model_copy(update={"modes": modes, "passes_done": len(values)}))
    return run.model_copy(update={"cases": cases})


def without_splits(run: RunRecord) -> RunRecord:
    cases = [
        case.model_copy(
            update={"modes": {n: m.model_copy(update={"levels": {}}) for n, m in case.modes.items()}}
        )
        for case in run.cases
    ]
    return run.model_copy(update={"cases": cases})


def _refuse_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    levels_module.forget_levels()

    def refused(*_: object) -> None:
        raise AssertionError("a mixture fit was made")

    monkeypatch.setattr(levels_module, "_two_components", refused)


@pytest.fixture
def no_fits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any mixture fit made inside the test fails it (the rule's cache emptied first and after)."""
    _refuse_fits(monkeypatch)
    yield
    levels_module.forget_levels()


def test_sample_keys_are_the_literal_of_a_kept_split() -> None:
    assert get_args(SampleKey) == SAMPLE_KEYS


def test_a_run_written_keeps_the_rules_own_split_for_every_series_that_needs_a_fit(tmp_path: Path) -> None:
    run = two_level_run()
    write_run(tmp_path, run)
    back = load_run(tmp_path)
    for case in back.cases:
        eager, graph = case.modes["eager"], case.modes["graph"]
        assert set(eager.levels) == set(SAMPLE_KEYS)  # every series at two levels needs the fit
        assert not graph.levels  # one level, decided without a fit: nothing kept
        for key, split in eager.levels.items():
            medians = eager.pass_medians(key)
            own = find_levels(medians)
            assert split.medians == medians_digest(medians)
            assert split.levels == [list(level.passes) for level in own.levels] == [[0, 2, 5], [1, 3, 4]]
            assert kept_split(eager, key, medians) == split and series_levels(eager, key, medians) == own


def test_modes_of_two_passes_keep_no_split(tmp_path: Path) -> None:
    write_run(tmp_path, make_run(passes=2))
    assert all(not m.levels for case in load_run(tmp_path).cases for m in case.modes.values())


def test_readers_take_the_kept_split_without_a_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    run = with_level_splits(two_level_run())  # its fits made here
    _refuse_fits(monkeypatch)  # and none after
    case = run.cases[0]
    eager = case.modes["eager"]
    assert not list(fits_to_make([eager]))
    assert len(series_levels(eager, WALL).levels) == 2
    assert metric_levels(case, "eager", "wall_us_per_launch").levels[1].passes == (1, 3, 4)
    assert len(RowSeries(case, "eager").levels("cpu_us_per_launch").levels) == 2
    table = run_table(run).set_index(["case", "mode"])  # the CSV's level columns, every row, no fit
    assert (table.xs("eager", level="mode")["wall_us_per_launch_levels"] == 2).all()
    assert any(r["levels"] for r in records(compare_runs(run, run)))


def test_without_a_kept_split_the_reader_fits(no_fits: None) -> None:
    eager = two_level_run().cases[0].modes["eager"]
    assert len(list(fits_to_make([eager]))) == len(SAMPLE_KEYS)  # one per series: none kept
    with pytest.raises(AssertionError, match="a mixture fit was made"):
        series_levels(eager, WALL)


def _with_split(result: ModeResult, key: SampleKey, split: LevelSplit) -> ModeResult:
    return result.model_copy(update={"levels": {**result.levels, key: split}})


@pytest.mark.parametrize(
    "change",
    [
        {"medians": "0" * 16},  # found on other medians
        {"levels": [[0, 2], [1, 3, 4]]},  # a pass left out
        {"levels": [[0, 2, 5], [1, 3, 4, 6]]},  # a pass the series does not have
        {"levels": [[1, 3, 4], [0, 2, 5]]},  # the high level first
        {"levels": [[0, 2, 5], [1, 3, 4]], "apart": [1]},  # passes apart beside two levels
    ],
    ids=["digest", "missing pass", "unknown pass", "order", "apart with two"],
)
def test_a_split_that_does_not_describe_the_series_is_not_taken(change: dict[str, object]) -> None:
    run = with_level_splits(two_level_run())
    eager = run.cases[0].modes["eager"]
    kept = eager.levels[WALL]
    bad = _with_split(eager, WALL, kept.model_copy(update=change))
    medians = bad.pass_medians(WALL)
    assert kept_split(bad, WALL, medians) is None
    assert series_levels(bad, WALL) == find_levels(medians)  # the rule's own answer instead
    assert list(fits_to_make([bad], [WALL])) == [tuple(medians)]


def test_changed_samples_make_the_kept_split_stale() -> None:
    eager = with_level_splits(two_level_run()).cases[0].modes["eager"]
    changed = eager.with_samples({k: [v * 1.01 for v in vs] for k, vs in eager.samples.items()})
    changed = changed.model_copy(update={"levels": eager.levels})
    assert kept_split(changed, WALL, changed.pass_medians(WALL)) is None


def test_levels_on_another_unit_keep_the_passes() -> None:
    seconds = [v * 1e-6 * 50 for v in TWO_LEVELS]
    found = find_levels(seconds)
    on = found.on(TWO_LEVELS)
    assert [level.passes for level in on.levels] == [level.passes for level in found.levels]
    assert [level.center for level in on.levels] == pytest.approx(
        [level.center / (1e-6 * 50) for level in found.levels]
    )
    assert split_levels(TWO_LEVELS, [[0, 2, 5], [1, 3, 4]]) == find_levels(TWO_LEVELS)


def test_compare_gives_the_same_table_with_kept_splits_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    base, current = two_level_run(), two_level_run(1.02)
    levels_module.forget_levels()
    plain = records(compare_runs(without_splits(base), without_splits(current)))  # the fits made here
    kept_base, kept_current = with_level_splits(base), with_level_splits(current)
    _refuse_fits(monkeypatch)
    kept = records(compare_runs(kept_base, kept_current))  # no fit at all
    levels_module.forget_levels()
    assert kept == plain
    assert sum(bool(r["levels"]) for r in kept) >= len(base.cases)  # every eager row noted at two levels


def test_digest_names_the_exact_doubles() -> None:
    assert medians_digest([1.0, 2.0]) != medians_digest([1.0, math.nextafter(2.0, 3.0)])
    assert len(medians_digest([])) == 16
