"""Change points on synthetic series built from the committed H200 runs' raw passes (tests/history/synth.py):
12 runs, graph rows +8% from run 7 with the driver changed there, host drift on host-bound rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from synth import SeriesSpec, series

from launchbench.history.db import HistoryDB
from launchbench.history.ingest import ingest_run_dir
from launchbench.history.query import pass_series


def detect_changes(*args: Any, **kwargs: Any) -> Any:
    """history.changes.detect_changes, imported as a test runs: ruptures and scipy.stats, which it
    imports, would otherwise be 0.8 s of every xdist worker's collection."""
    from launchbench.history.changes import detect_changes as detect

    return detect(*args, **kwargs)


def _ingest(url: str, dirs: list[Path]) -> HistoryDB:
    db = HistoryDB(url)
    for d in dirs:
        ingest_run_dir(db, d)
    return db


def test_step_at_run_7_found_on_graph_rows_and_named(db_url: str, stepped: list[Path]) -> None:
    with _ingest(db_url, stepped) as db:
        changes = detect_changes(db, metrics=("wall_us_per_launch", "gpu_us_per_iter"))
        rows = pass_series(db)
    gpu_bound_graph = {s.key for s in rows if s.key[2] == "graph" and not any(s.host_bound)}
    assert len(gpu_bound_graph) >= 6  # every graph row but the host-bound one-launch graph of empty kernels
    for key in gpu_bound_graph:
        found = [
            c for c in changes if (c.scenario, c.case, c.mode) == key and c.metric == "wall_us_per_launch"
        ]
        assert len(found) == 1, (key, found)
        change = found[0]
        assert change.after.name == "run-07" and change.before.name == "run-06"
        assert change.step_ci_low < 0.08 < change.step_ci_high and change.step_ci_low > 0
        assert change.explanation == "driver 580.159.04 → 590.10.01"
    unmoved = [c for c in changes if c.mode == "eager"]
    assert unmoved == []
    assert all(c.after.name == "run-07" for c in changes)


def test_no_change_without_a_step(db_url: str, series_of: Callable[[SeriesSpec], list[Path]]) -> None:
    with _ingest(db_url, series_of(SeriesSpec(seed=3))) as db:
        assert detect_changes(db) == []


@pytest.mark.parametrize("seed", [2, 5])
def test_host_drift_alone_is_not_a_change(tmp_path: Path, seed: int) -> None:
    """Stronger drift (18% sd per run) on host-bound rows, no step anywhere: nothing is reported."""
    with _ingest(
        f"sqlite:///{tmp_path / 'h.sqlite'}", series(tmp_path / "runs", SeriesSpec(drift_sd=0.18, seed=seed))
    ) as db:
        assert detect_changes(db) == []


def test_candidates_are_those_of_pelt_with_the_least_squares_cost() -> None:
    """candidates() searches with KernelCPD's linear kernel (C); ruptures' Pelt with the l2 cost (Python)
    proposes the same steps: random series of 4–60 runs, with and without a step, with and without drift."""
    import math

    import numpy as np
    import ruptures as rpt

    from launchbench.history.changes import candidates, noise

    rng = np.random.default_rng(0)
    proposed = 0
    for trial in range(200):
        n = int(rng.integers(4, 60))
        values = rng.normal(0, 0.02, n) + np.where(np.arange(n) >= n // 2, rng.choice([0, 0.05, 0.1]), 0)
        if trial % 3 == 0:
            values += np.cumsum(rng.normal(0, 0.03, n))
        scaled = (values / noise(values)).reshape(-1, 1)
        ends = rpt.Pelt(model="l2", min_size=2, jump=1).fit(scaled).predict(pen=2 * math.log(n))
        assert candidates(values) == [e for e in ends if e < n], (trial, values)
        proposed += len(candidates(values))
    assert proposed > 50  # the series did have steps to propose


def test_permutation_p_in_chunks_is_that_of_all_orderings_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The orderings are drawn in chunks to bound memory; the p-value is the one of drawing all 999 at once."""
    import numpy as np

    from launchbench.history import changes

    rng = np.random.default_rng(3)
    segments = [rng.normal(0, 0.02, n) + np.where(np.arange(n) >= n // 2, 0.02, 0) for n in (8, 40, 300)]
    chunked = [changes.permutation_p(s) for s in segments]
    monkeypatch.setattr(changes, "PERMUTATION_CHUNK", changes.PERMUTATIONS)
    assert [changes.permutation_p(s) for s in segments] == chunked
    assert min(chunked) < 0.01 < max(chunked)  # the segments span both sides of alpha


def test_split_statistic_is_the_written_out_formula_float_for_float() -> None:
    """_max_split_statistic, computed in place over views of the running sums, gives the same floats as
    the formula written out with a copy per term (what keeps the p-values and the page unchanged)."""
    import numpy as np

    from launchbench.history.changes import NOISE_FLOOR, _max_split_statistic

    def written_out(values: np.ndarray, min_size: int) -> np.ndarray:
        n = values.shape[1]
        k = np.arange(min_size, n - min_size + 1)
        csum, csq = np.cumsum(values, axis=1), np.cumsum(values**2, axis=1)
        s1, q1 = csum[:, k - 1], csq[:, k - 1]
        s2, q2 = csum[:, -1:] - s1, csq[:, -1:] - q1
        ss = (q1 - s1**2 / k) + (q2 - s2**2 / (n - k))
        pooled = np.maximum(ss / (n - 2), NOISE_FLOOR**2)
        return np.max(k * (n - k) / n * (s1 / k - s2 / (n - k)) ** 2 / pooled, axis=1)

    rng = np.random.default_rng(7)
    for n in (4, 5, 9, 40, 333):
        for scale in (1e-6, 1e-3, 1.0, 50.0):
            values = rng.normal(1.0, scale, (6, n))
            values[0] = 1.0  # identical runs: the noise floor
            values[1, : n // 2] += 0.05  # a step
            for min_size in (1, 2):
                assert np.array_equal(_max_split_statistic(values, min_size), written_out(values, min_size))
