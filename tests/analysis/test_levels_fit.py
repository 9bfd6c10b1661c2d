"""The mixture fit behind the host levels (launchbench.measure.mixture, NumPy): the one-component BIC in
closed form against scikit-learn's one-component fit, and the two-component fit against scikit-learn's
GaussianMixture from the same start, on varied synthetic log pass medians (levels at 0.1% to 30% spread,
with and without a second level); the fits made together in worker processes against the fits made
one by one."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mixture_reference import CLOSE, sklearn_fit, sklearn_labels_and_gain

from launchbench.analysis.compare import compare_runs
from launchbench.measure import levels
from launchbench.measure.levels import REG_COVAR, _two_components, find_levels, fitted_together
from launchbench.measure.mixture import one_component_bic
from launchbench.report.run_files import write_tables
from launchbench.report.tables import comparison_csv
from launchbench.results.store import load_run


def _samples(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    drawn = []
    for i in range(60):
        n = int(rng.integers(4, 13))
        logs = rng.normal(-12.0, rng.choice([0.001, 0.02, 0.1, 0.3]), n)
        if i % 2:
            logs[: max(1, n // 3)] += rng.choice([0.05, 0.2, 0.5])
        drawn.append(logs)
    return drawn


@pytest.mark.parametrize("seed", [0, 1])
def test_the_closed_form_bic_is_scikit_learns_one_component_bic(seed):
    for logs in _samples(seed):
        expected = sklearn_fit(logs, 1).bic(logs.reshape(-1, 1))
        assert one_component_bic(logs, REG_COVAR) == pytest.approx(expected, **CLOSE)


@pytest.mark.parametrize("seed", [2, 3, 5, 6, 7, 8])
def test_the_numpy_fit_gives_scikit_learns_components_and_gain(seed):
    for logs in _samples(seed):
        labels, gain = sklearn_labels_and_gain(logs)
        fitted_labels, fitted_gain = _two_components(logs)
        assert fitted_labels.tolist() == labels
        assert fitted_gain == pytest.approx(gain, **CLOSE)


def test_the_comparison_with_scikit_learn_catches_a_fit_that_differs():
    """A fit stopped after its first EM step gives a gain beyond mixture_reference.CLOSE on many draws: the
    comparison with scikit-learn can fail."""
    from launchbench.measure import mixture

    draws = [logs for seed in (2, 3) for logs in _samples(seed)]
    moved = 0
    for logs in draws:
        _, gain = sklearn_labels_and_gain(logs)
        start = levels.widest_gap_start(logs)
        one_step = mixture.fit_two(logs, start.weights, start.means, start.precision, REG_COVAR, max_iter=1)
        if one_component_bic(logs, REG_COVAR) - one_step.bic != pytest.approx(gain, **CLOSE):
            moved += 1
    assert moved > len(draws) // 4


def _pass_medians(seed: int) -> list[list[float]]:
    return [np.exp(logs).tolist() for logs in _samples(seed)]


def test_fits_made_together_in_worker_processes_are_the_fits_made_alone(monkeypatch):
    series = _pass_medians(4)
    levels.forget_levels()
    alone = [find_levels(values) for values in series]
    assert any(one.two or one.apart for one in alone)  # the series hold levels to find
    levels.forget_levels()

    def no_fit_here(logs):
        raise AssertionError("a fit made in this process inside the block")

    with fitted_together(series, jobs=2, least=1) as made:
        monkeypatch.setattr(levels, "_two_components", no_fit_here)
        together = [find_levels(values) for values in series]
    assert made == sum(levels.needs_fit(tuple(values)) for values in series) > 0
    assert together == alone
    levels.forget_levels()


def test_fits_made_before_are_not_made_again_together(monkeypatch):
    """A fit find_levels (or an earlier block) made is kept: a later block makes only the others, as
    results.json's write and then the tables of the same record at a run's end ask for the same fits."""
    series = _pass_medians(4)
    levels.forget_levels()
    alone = [find_levels(values) for values in series[:3]]
    monkeypatch.setattr("joblib.Parallel", None)  # a pool would fail to start
    monkeypatch.setattr(levels, "_two_components", None)  # and no fit can be made here
    with fitted_together(series[:3], least=1) as made:
        assert made == 0
        assert [find_levels(values) for values in series[:3]] == alone
    monkeypatch.undo()
    with fitted_together(series, jobs=2, least=1) as made:
        assert made == sum(levels.needs_fit(tuple(values)) for values in series[3:]) > 0
    levels.forget_levels()


def test_too_few_fits_are_left_to_find_levels_and_no_pool_starts(monkeypatch):
    series = _pass_medians(5)
    monkeypatch.setattr("joblib.Parallel", None)  # a pool would fail to start
    with fitted_together(series) as made:
        assert made == 0
        assert find_levels(series[1]).count in (1, 2)


def test_compare_reads_the_same_with_its_fits_made_together(monkeypatch):
    """Two 24-case runs whose copies differ (every fit made): compare's CSV with the host levels' fits
    made one by one in this process and made together in worker processes."""
    root = Path(__file__).parent.parent.parent
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    from compare_speed import SOURCES, scaled

    baseline, current = (scaled(load_run(source), 24, distinct=True) for source in SOURCES)
    levels.forget_levels()
    alone = comparison_csv(compare_runs(baseline, current))
    levels.forget_levels()
    monkeypatch.setattr(levels, "PARALLEL_FITS", 1)
    fit_here = levels._two_components
    monkeypatch.setattr(levels, "_two_components", None)  # every fit now made in a worker, or this fails
    together = comparison_csv(compare_runs(baseline, current))
    monkeypatch.setattr(levels, "_two_components", fit_here)
    levels.forget_levels()
    assert together == alone and "levels" in alone.splitlines()[0]


def test_a_runs_tables_read_the_same_with_their_fits_made_together(monkeypatch, tmp_path):
    """A 24-case run whose copies differ: its results.csv with the host levels' fits made one by one in
    this process and made together in worker processes before the tables (report.run_files)."""
    root = Path(__file__).parent.parent.parent
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    from compare_speed import SOURCES, scaled

    run = scaled(load_run(SOURCES[0]), 24, distinct=True)
    alone, together = tmp_path / "alone", tmp_path / "together"
    alone.mkdir(), together.mkdir()
    levels.forget_levels()
    monkeypatch.setattr(levels, "PARALLEL_FITS", 10**9)  # every fit made here
    write_tables(alone, run)
    levels.forget_levels()
    monkeypatch.setattr(levels, "PARALLEL_FITS", 1)
    fit_here = levels._two_components
    monkeypatch.setattr(levels, "_two_components", None)  # every fit now made in a worker, or this fails
    write_tables(together, run)
    monkeypatch.setattr(levels, "_two_components", fit_here)
    levels.forget_levels()
    table = (alone / "results.csv").read_text()
    assert (together / "results.csv").read_text() == table
    assert (pd.read_csv(alone / "results.csv")["wall_us_per_launch_levels"] == 2).any()
