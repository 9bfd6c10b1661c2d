"""compare.py: alignment, ratio of medians with a bootstrap CI, Mann–Whitney significance, verdicts.

Data-driven tests go through the ``baseline_run`` fixture: the real H200 quickstart run when
tests/data/h200/quickstart-a exists, a synthetic run shaped like it otherwise. They must hold for both.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pytest
from builders import make_run

from launchbench.compare import (
    COMPARABLE_STATUSES,
    DEFAULT_METRICS,
    CompareSettings,
    CompareSettingsError,
    DifferentGpuError,
    RowKey,
    bootstrap_medians,
    compare_runs,
    compare_samples,
    decide,
    environment_summary,
    gpu_models_differ,
    mann_whitney_p,
    parse_threshold,
    ratio_of_medians_ci,
)
from launchbench.results.schema import WALL, RunRecord
from launchbench.results.store import load_run

REAL_BASELINE = Path(__file__).parent / "data" / "h200" / "quickstart-a"
OTHER_GPU = "NVIDIA A100-SXM4-80GB"


def load_baseline_run() -> RunRecord:
    if REAL_BASELINE.exists():
        return load_run(REAL_BASELINE)
    return make_run()


@pytest.fixture
def baseline_run() -> RunRecord:
    """The real H200 quickstart run when present, else a synthetic run of the same shape."""
    return load_baseline_run()


# ------------------------------------------------------------------------------------------- helpers


def row_keys(run: RunRecord) -> list[RowKey]:
    return [(c.scenario, c.case_id, mode) for c in run.cases for mode in c.modes]


def comparable_keys(run: RunRecord) -> list[RowKey]:
    """Rows with status ok/budget and throughput samples: the ones a comparison can judge."""
    out = []
    for case in run.cases:
        for mode, result in case.modes.items():
            if result.status in COMPARABLE_STATUSES and len(case.samples(mode, WALL)) > 0:
                out.append((case.scenario, case.case_id, mode))
    return out


def chosen_keys(run: RunRecord) -> set[RowKey]:
    """Every comparable graph row and the first comparable eager row."""
    keys = comparable_keys(run)
    graph = {k for k in keys if k[2] == "graph"}
    eager = [k for k in keys if k[2] == "eager"][:1]
    chosen = graph | set(eager)
    assert chosen and len(chosen) < len(keys), "the data must have scaled and unscaled rows"
    return chosen


def scale_rows(run: RunRecord, keys: Iterable[RowKey], factor: float) -> RunRecord:
    """A copy of the run whose raw samples (every series) in the given rows are multiplied by factor."""
    wanted = set(keys)
    cases = []
    for case in run.cases:
        modes = {}
        for mode, result in case.modes.items():
            if (case.scenario, case.case_id, mode) in wanted:
                samples = {k: [v * factor for v in values] for k, values in result.samples.items()}
                result = result.model_copy(update={"samples": samples})
            modes[mode] = result
        cases.append(case.model_copy(update={"modes": modes}))
    return run.model_copy(update={"cases": cases})


def with_gpu(run: RunRecord, name: str) -> RunRecord:
    env = dict(run.environment)
    env["gpu"] = {**env.get("gpu", {}), "name": name}
    return run.model_copy(update={"environment": env})


def verdicts(comparison, metric: str) -> dict[RowKey, str]:
    return {row.key: row.metric(metric).verdict for row in comparison.rows}


# ------------------------------------------------------------------------------------- the data tests


def test_self_comparison_is_same_everywhere(baseline_run: RunRecord) -> None:
    comparison = compare_runs(baseline_run, baseline_run)
    assert [r.key for r in comparison.rows] == row_keys(baseline_run)
    assert comparable_keys(baseline_run)
    for row in comparison.rows:
        for mc in row.metrics:
            if row.comparable and mc.n_baseline:
                assert mc.verdict == "same", (row.label, mc)
                assert mc.ratio == pytest.approx(1.0)
                assert mc.p_value == 1.0
                assert not mc.significant
            elif not row.comparable:
                assert mc.verdict == "failed"
    assert comparison.env_differences == ()
    assert not comparison.different_gpu


@pytest.mark.parametrize("factor, verdict", [(1.10, "slower"), (0.90, "faster")])
def test_scaled_rows_are_flagged_exactly(baseline_run: RunRecord, factor: float, verdict: str) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, factor))
    got = verdicts(comparison, "wall_us_per_launch")
    flagged = {k for k, v in got.items() if v == verdict}
    assert flagged == chosen
    assert all(v == "same" for k, v in got.items() if k not in chosen and k in comparable_keys(baseline_run))
    for row in comparison.rows:
        if row.key in chosen:
            mc = row.metric("wall_us_per_launch")
            assert mc.ratio == pytest.approx(factor)
            assert mc.significant
            low, high = mc.change_ci
            assert low <= factor - 1 <= high


def test_scaling_moves_every_metric_ratio(baseline_run: RunRecord) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, 1.10))
    for row in comparison.rows:
        if row.key in chosen:
            for mc in row.metrics:
                if mc.n_baseline:
                    assert mc.ratio == pytest.approx(1.10)
                    assert mc.verdict in ("slower", "uncertain")


def test_independent_runs_of_same_machine_have_no_false_changes() -> None:
    comparison = compare_runs(make_run(seed=0), make_run(seed=1))
    counts = comparison.counts()
    assert counts["slower"] == counts["faster"] == 0
    assert counts["same"] > 0


def test_different_gpu_is_refused_unless_allowed(baseline_run: RunRecord) -> None:
    other = with_gpu(baseline_run, OTHER_GPU)
    with pytest.raises(DifferentGpuError, match="different GPU models"):
        compare_runs(baseline_run, other)
    comparison = compare_runs(baseline_run, other, allow_different_gpu=True)
    assert comparison.different_gpu
    assert [d.item for d in comparison.env_differences] == ["GPU"]
    assert comparison.env_differences[0].current == OTHER_GPU


def test_software_differences_are_shown_not_refused(baseline_run: RunRecord) -> None:
    env = {**baseline_run.environment, "driver": "999.1", "cupy": "99.0.0"}
    comparison = compare_runs(baseline_run, baseline_run.model_copy(update={"environment": env}))
    items = {d.item: d for d in comparison.env_differences}
    assert set(items) == {"driver", "CuPy"}
    assert items["driver"].current == "999.1"
    assert not comparison.different_gpu


def test_rows_only_on_one_side_are_listed(baseline_run: RunRecord) -> None:
    dropped, *kept = baseline_run.cases
    extra = kept[0].model_copy(update={"case_id": kept[0].case_id + "-new"})
    current = baseline_run.model_copy(update={"cases": [*kept, extra]})
    comparison = compare_runs(baseline_run, current)
    only_base = {r.key for r in comparison.only_in("baseline")}
    only_cur = {r.key for r in comparison.only_in("current")}
    assert only_base == {(dropped.scenario, dropped.case_id, m) for m in dropped.modes}
    assert only_cur == {(extra.scenario, extra.case_id, m) for m in extra.modes}
    for row in comparison.rows:
        if row.key in only_base | only_cur:
            assert {m.verdict for m in row.metrics} == {"missing"}
            assert "only in" in row.detail
    assert len(comparison.rows) == len(row_keys(baseline_run)) + len(extra.modes)
    assert comparison.rows[-1].key[1] == extra.case_id  # current-only rows come last


def test_rows_not_ok_get_failed(baseline_run: RunRecord) -> None:
    case = baseline_run.cases[0]
    broken = case.model_copy(
        update={"modes": {**case.modes, "graph": case.modes["graph"].model_copy(update={"status": "failed", "reason": "boom"})}}
    )
    current = baseline_run.with_case(broken)
    already_failed = compare_runs(baseline_run, baseline_run).counts()["failed"]
    comparison = compare_runs(baseline_run, current)
    row = next(r for r in comparison.rows if r.key == (case.scenario, case.case_id, "graph"))
    assert {m.verdict for m in row.metrics} == {"failed"}
    assert "boom" in row.detail and row.current_status == "failed"
    assert comparison.counts()["failed"] == already_failed + len(DEFAULT_METRICS)


def test_metric_without_samples_is_missing(baseline_run: RunRecord) -> None:
    key = comparable_keys(baseline_run)[0]
    case = next(c for c in baseline_run.cases if c.case_id == key[1] and c.scenario == key[0])
    result = case.modes[key[2]]
    samples = {k: v for k, v in result.samples.items() if k != "latency_s"}
    current = baseline_run.with_case(
        case.model_copy(update={"modes": {**case.modes, key[2]: result.model_copy(update={"samples": samples})}})
    )
    row = next(r for r in compare_runs(baseline_run, current).rows if r.key == key)
    assert row.metric("latency_us").verdict == "missing"
    assert row.metric("wall_us_per_launch").verdict == "same"


def test_quickstart_comparison_is_fast(baseline_run: RunRecord) -> None:
    current = scale_rows(baseline_run, chosen_keys(baseline_run), 1.1)
    start = time.perf_counter()
    compare_runs(baseline_run, current)
    assert time.perf_counter() - start < 2.0


def test_comparison_is_deterministic(baseline_run: RunRecord) -> None:
    current = scale_rows(baseline_run, chosen_keys(baseline_run), 1.03)
    assert compare_runs(baseline_run, current) == compare_runs(baseline_run, current)


# ----------------------------------------------------------------------- statistics on synthetic data


def _noisy(rng: np.random.Generator, noise: float, n: int, center: float = 6.5) -> np.ndarray:
    return center * (1 + noise * rng.standard_normal(n)).clip(0.5, None)


@pytest.mark.parametrize("noise", [0.005, 0.03, 0.05, 0.10])
def test_ten_percent_shift_of_the_whole_sample_set_is_flagged(noise: float) -> None:
    """Eager data on a real GPU can be 3–10% noisy: a 10% shift of every sample must still count."""
    settings = CompareSettings(metrics=("wall_us_per_launch",))
    for seed in range(25):
        base = _noisy(np.random.default_rng(seed), noise, 30)
        assert compare_samples("wall_us_per_launch", base, base * 1.10, settings).verdict == "slower"
        assert compare_samples("wall_us_per_launch", base, base * 0.90, settings).verdict == "faster"


@pytest.mark.parametrize("noise", [0.005, 0.03])
def test_ten_percent_shift_between_independent_runs_is_flagged(noise: float) -> None:
    settings = CompareSettings(metrics=("wall_us_per_launch",))
    for seed in range(25):
        rng = np.random.default_rng(seed)
        base, cur = _noisy(rng, noise, 30), _noisy(rng, noise, 30) * 1.10
        assert compare_samples("wall_us_per_launch", base, cur, settings).verdict == "slower"


def test_small_significant_change_is_same() -> None:
    base = _noisy(np.random.default_rng(0), 0.002, 200)
    mc = compare_samples("wall_us_per_launch", base, base * 1.02, CompareSettings())
    assert mc.significant and mc.verdict == "same"


def test_too_few_noisy_samples_are_uncertain() -> None:
    rng = np.random.default_rng(3)
    base, cur = _noisy(rng, 0.3, 5), _noisy(rng, 0.3, 5) * 1.08
    mc = compare_samples("latency_us", base, cur, CompareSettings())
    assert not mc.significant and mc.verdict == "uncertain"


def test_per_metric_threshold() -> None:
    base = _noisy(np.random.default_rng(0), 0.002, 100)
    settings = CompareSettings(thresholds={"latency_us": 0.10})
    assert compare_samples("latency_us", base, base * 1.08, settings).verdict == "same"
    assert compare_samples("wall_us_per_launch", base, base * 1.08, settings).verdict == "slower"


@pytest.mark.parametrize(
    "significant, change, ci, expected",
    [
        (True, 0.10, (0.08, 0.12), "slower"),
        (True, -0.10, (-0.12, -0.08), "faster"),
        (True, 0.05, (0.04, 0.06), "slower"),  # exactly the threshold counts
        (True, 0.03, (0.01, 0.08), "same"),  # real but smaller than the threshold
        (False, 0.01, (-0.02, 0.03), "same"),  # CI inside ±threshold
        (False, 0.01, (-0.04, 0.09), "uncertain"),  # CI reaches beyond the threshold
        (False, 0.07, (-0.01, 0.15), "uncertain"),
        (False, math.nan, (math.nan, math.nan), "uncertain"),
    ],
)
def test_decide(significant: bool, change: float, ci: tuple[float, float], expected: str) -> None:
    assert decide(significant, change, ci, 0.05) == expected


def test_bootstrap_medians_match_resampling() -> None:
    rng = np.random.default_rng(7)
    for n in (7, 10, 31, 200):
        x = rng.lognormal(0, 0.1, n)
        exact = bootstrap_medians(x, 100_000, np.random.default_rng(1))
        idx = np.random.default_rng(2).integers(0, n, size=(20_000, n))
        brute = np.median(x[idx], axis=1)
        assert np.percentile(exact, [2.5, 50, 97.5]) == pytest.approx(np.percentile(brute, [2.5, 50, 97.5]), rel=0.01)


def test_ratio_ci_and_mann_whitney_basics() -> None:
    x = _noisy(np.random.default_rng(0), 0.01, 50)
    low, high = ratio_of_medians_ci(x, x * 1.2)
    assert low < 1.2 < high and low > 1.1
    assert mann_whitney_p(x, x) == 1.0
    assert mann_whitney_p(np.ones(10), np.ones(10)) == 1.0
    assert mann_whitney_p(x, x * 1.2) < 1e-6
    assert math.isnan(mann_whitney_p(np.array([]), x))


def test_parse_threshold() -> None:
    assert parse_threshold("latency_us:10%") == ("latency_us", pytest.approx(0.10))
    assert parse_threshold("2.5%") == (None, pytest.approx(0.025))
    for bad in ("latency_us:10", "nope:5%", "latency_us:x%", "latency_us:-1%"):
        with pytest.raises(CompareSettingsError):
            parse_threshold(bad)


def test_settings_validation() -> None:
    with pytest.raises(CompareSettingsError, match="unknown metric"):
        CompareSettings(metrics=("speed",))
    with pytest.raises(CompareSettingsError):
        CompareSettings(alpha=1.5)


def test_environment_summary_and_gpu_names(baseline_run: RunRecord) -> None:
    env = environment_summary(baseline_run)
    assert set(env) == {"gpu", "driver", "cuda_runtime", "cupy"}
    assert env["gpu"] == baseline_run.gpu_name
    assert environment_summary(baseline_run.model_copy(update={"environment": {}}))["gpu"] == "unknown"
    assert not gpu_models_differ("NVIDIA H200", "nvidia  h200")
    assert gpu_models_differ("NVIDIA H200", OTHER_GPU)
    assert not gpu_models_differ("unknown", OTHER_GPU)
