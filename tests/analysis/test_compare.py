"""compare.py: alignment, the change with a CI and a t test over passes (shrunk row variances), verdicts.

Data-driven tests go through the ``baseline_run`` fixture, which gives them both the real H200
quickstart run (tests/data/h200/quickstart-a/results.json) and a synthetic run shaped like it (three
passes where the real one has five, eager rows drifting between host speed states, graph rows steady).
The acceptance tests on real data (back-to-back runs flag nothing; 10% longer chains are flagged)
skip while the real runs are absent.
"""

from __future__ import annotations

import math
from pathlib import Path

import compare_helpers
import numpy as np
import pytest
from builders import make_run
from compare_helpers import (
    OTHER_GPU,
    REAL_BASELINE,
    REAL_LONGER,
    REAL_REPEAT,
    STABLE_SPREAD,
    chosen_keys,
    comparable_keys,
    directional,
    drifting_eager_key,
    needs_real,
    pass_spread,
    row_keys,
    scale_rows,
    verdicts,
    with_gpu,
)

from launchbench.analysis.compare import (
    DEFAULT_THRESHOLD,
    CompareSettings,
    CompareSettingsError,
    DifferentGpuError,
    GpuMismatch,
    MetricComparison,
    MetricSamples,
    RowComparison,
    RowContext,
    adjust_across_rows,
    benjamini_hochberg,
    bootstrap_medians,
    compare_paired,
    compare_runs,
    compare_samples,
    decide,
    gpu_models_differ,
    parse_threshold,
    trimmed_rounds,
)
from launchbench.analysis.defaults import COMPARED_METRICS
from launchbench.analysis.drift import NoisePrior, RowVariance, is_host_bound, stratum
from launchbench.results.environment import describe_environment, summarize_environment
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run

baseline_run = compare_helpers.baseline_run


def samples_compared(
    metric: str,
    baseline: np.ndarray,
    current: np.ndarray,
    settings: CompareSettings,
    baseline_passes: list[int] | None = None,
    current_passes: list[int] | None = None,
    prior: NoisePrior | None = None,
) -> MetricComparison:
    """compare_samples of one metric's samples, separate runs, with an optional prior."""
    samples = MetricSamples(metric, baseline, current, baseline_passes, current_passes)
    return compare_samples(samples, settings, RowContext(prior=prior))


# ------------------------------------------------------------------------------------- the data tests


def test_self_comparison_has_no_change(baseline_run: RunRecord) -> None:
    """A run against itself: nothing slower or faster; rows whose passes agree are 'same', rows whose
    passes drift may be 'uncertain' (their CI is as wide as the drift, so small changes cannot be told),
    and so may a host-bound row or CPU-time metric, whose CI is at least the host's drift."""
    comparison = compare_runs(baseline_run, baseline_run)
    cases = {(c.scenario, c.case_id): c for c in baseline_run.cases}
    assert [r.key for r in comparison.rows] == row_keys(baseline_run)
    assert comparable_keys(baseline_run)
    steady = 0
    for row in comparison.rows:
        for mc in row.metrics:
            if row.comparable and mc.n_baseline:
                assert mc.verdict in ("same", "uncertain"), (row.label, mc)
                assert mc.ratio == pytest.approx(1.0)
                assert mc.p_value == 1.0
                assert not mc.significant
                low, high = mc.change_ci
                assert low <= 0 <= high
                host_bound = is_host_bound(cases[row.key[:2]], row.mode)
                if (
                    pass_spread(baseline_run, row.key, mc.metric) < 0.01
                    and not stratum(mc.metric, host_bound)[1]
                ):
                    assert mc.verdict == "same", (row.label, mc)
                    steady += 1
            elif not row.comparable:
                assert mc.verdict == "failed"
    assert steady > 0
    assert comparison.env_differences == ()
    assert not comparison.different_gpu


@pytest.mark.parametrize("factor, verdict", [(1.10, "slower"), (0.90, "faster")])
def test_scaled_rows_are_flagged_exactly(baseline_run: RunRecord, factor: float, verdict: str) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, factor))
    got = verdicts(comparison, "wall_us_per_launch")
    flagged = {k for k, v in got.items() if v == verdict}
    assert flagged == chosen
    others = [v for k, v in got.items() if k not in chosen and k in comparable_keys(baseline_run)]
    assert set(others) <= {"same", "uncertain"}
    for row in comparison.rows:
        if row.key in chosen:
            mc = row.metric("wall_us_per_launch")
            assert mc.ratio == pytest.approx(factor)
            assert mc.significant
            low, high = mc.change_ci
            assert low <= factor - 1 <= high
            assert (low > 0) if factor > 1 else (high < 0)


def test_synthetic_scaled_rows_are_every_gpu_bound_graph_row() -> None:
    run = make_run(passes=3)
    graph = {k for k in comparable_keys(run) if k[2] == "graph"}
    assert chosen_keys(run) == graph - {("quickstart", "empty/length=1", "graph")}


def test_scaling_moves_every_metric_ratio(baseline_run: RunRecord) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, 1.10))
    for row in comparison.rows:
        if row.key in chosen:
            for mc in row.metrics:
                if mc.n_baseline:
                    assert mc.ratio == pytest.approx(1.10)
                    assert mc.verdict in ("slower", "uncertain")


def test_drifting_eager_row_scaled_by_ten_percent_is_uncertain(baseline_run: RunRecord) -> None:
    """An eager row whose passes ran in different host speed states (pass medians ≥ 20% apart), every
    sample scaled by 1.10, is 'uncertain', not 'slower'.

    Why: the samples of one pass share one host state, so a run's level is only known as well as its
    passes agree; the test is over pass medians, and on a row whose passes are 20% apart a 10% change
    is within the noise. The verdict is 'uncertain' (measure more passes, or interleave with ab)."""
    key = drifting_eager_key(baseline_run)
    assert pass_spread(baseline_run, key) >= 0.20, "the data needs an eager row with large between-pass drift"
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, [key], 1.10))
    row = next(r for r in comparison.rows if r.key == key)
    for metric in ("wall_us_per_launch", "wall_us_per_iter"):
        mc = row.metric(metric)
        assert mc.ratio == pytest.approx(1.10)
        assert not mc.significant
        assert mc.mde > 0.10
        low, high = mc.change_ci
        assert low < 0 < high
        assert mc.verdict == "uncertain", mc


def test_independent_runs_of_same_machine_have_no_false_changes() -> None:
    comparison = compare_runs(make_run(seed=0), make_run(seed=1))
    counts = comparison.counts()
    assert counts["slower"] == counts["faster"] == 0
    assert counts["same"] > 0


@pytest.mark.parametrize("drift", [(1.0, 1.0, 1.35), (1.35, 1.35, 1.0), (1.0, 1.35, 1.35)])
def test_host_states_differing_between_runs_are_not_changes(drift: tuple[float, ...]) -> None:
    """Two synthetic runs of the same code whose passes met the host in other speed states: eager
    medians may differ by up to 35%, nothing is slower or faster, graph rows bound by the GPU are
    'same'; a graph row bound by the host's launch cost (CPU ≥ 80% of its wall time) is 'uncertain'."""
    base = make_run(seed=0, passes=3)
    comparison = compare_runs(base, make_run(seed=1, passes=3, eager_drift=drift))
    assert directional(comparison) == []
    graph_wall = {
        row.case: row.metric("wall_us_per_launch").verdict for row in comparison.rows if row.mode == "graph"
    }
    host_bound = {case.case_id for case in base.cases if is_host_bound(case, "graph")}
    assert host_bound == {"empty/length=1"}
    assert {v for k, v in graph_wall.items() if k not in host_bound} == {"same"}
    assert {graph_wall[k] for k in host_bound} == {"uncertain"}


def test_ten_percent_slower_synthetic_run_with_drift() -> None:
    """Every sample 10% slower in a run whose host drifts: graph rows bound by the GPU are slower, eager
    rows (whose passes drift by 35%) and the host-bound one-launch graph row are uncertain, never faster."""
    base = make_run(seed=0, passes=3)
    slower = scale_rows(make_run(seed=1, passes=3, eager_drift=(1.35, 1.0, 1.0)), row_keys(base), 1.10)
    comparison = compare_runs(base, slower)
    got = verdicts(comparison, "wall_us_per_iter")
    host_bound = {case.case_id for case in base.cases if is_host_bound(case, "graph")}
    assert {v for k, v in got.items() if k[2] == "graph" and k[1] not in host_bound} == {"slower"}
    assert {v for k, v in got.items() if k[2] == "graph" and k[1] in host_bound} <= {"slower", "uncertain"}
    assert {v for k, v in got.items() if k[2] == "eager"} <= {"slower", "uncertain"}


# ------------------------------------------------------------------- acceptance on real H200 runs


@needs_real(REAL_BASELINE, REAL_REPEAT)
def test_real_back_to_back_runs_flag_nothing() -> None:
    """(A) Two back-to-back real quickstart runs on the same H200, default settings: nothing is slower
    or faster, on any metric, although eager rows differ by up to ~25% with the host's speed state
    (results/aa/aa_check.txt)."""
    comparison = compare_runs(load_run(REAL_BASELINE), load_run(REAL_REPEAT))
    assert comparison.settings.default_threshold == DEFAULT_THRESHOLD
    assert directional(comparison) == []
    assert comparison.counts()["same"] > 0
    assert not comparison.env_differences


@needs_real(REAL_BASELINE, REAL_LONGER)
def test_real_longer_chains_are_flagged_slower() -> None:
    """(B) A real run whose chains are 10% longer (rounded up, same case names): every graph row whose
    passes agree in both runs is slower on wall_us_per_iter, and no eager row is faster on any metric.

    A graph row whose baseline passes drift by as much as the change (graph empty/length=1 launches
    one node, so its time is the drifting CPU's: 1.51–2.15 µs across run a's passes against 1.99–2.34 µs
    with two nodes in the longer run; run b, the same code as a, 1.47–2.29 µs) may come out 'uncertain'
    but never 'same' or 'faster'. The evidence there is no stronger than for the drift between the two
    back-to-back runs that (A) must not flag.
    """
    baseline, longer = load_run(REAL_BASELINE), load_run(REAL_LONGER)
    comparison = compare_runs(baseline, longer)
    graph = [k for k in comparable_keys(baseline) if k[2] == "graph"]
    assert len(graph) == 8
    got = verdicts(comparison, "wall_us_per_iter")
    steady = [k for k in graph if max(pass_spread(baseline, k), pass_spread(longer, k)) < STABLE_SPREAD]
    assert len(steady) >= 6
    for key in graph:
        expected = {"slower"} if key in steady else {"slower", "uncertain"}
        assert got[key] in expected, (key, got[key])
    eager_faster = [line for line in directional(comparison) if "[eager]" in line and "faster" in line]
    assert eager_faster == []


# ------------------------------------------------------------------------------------- the rest


def test_different_gpu_is_refused_unless_allowed(baseline_run: RunRecord) -> None:
    other = with_gpu(baseline_run, OTHER_GPU)
    with pytest.raises(DifferentGpuError, match="different GPU models"):
        compare_runs(baseline_run, other)
    comparison = compare_runs(baseline_run, other, gpu_mismatch=GpuMismatch.ALLOW)
    assert comparison.different_gpu
    assert [d.item for d in comparison.env_differences] == ["GPU"]
    assert comparison.env_differences[0].current == OTHER_GPU


def test_software_differences_are_shown_not_refused(baseline_run: RunRecord) -> None:
    env = baseline_run.environment.model_copy(update={"driver": "999.1", "cupy": "99.0.0"})
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
        update={
            "modes": {
                **case.modes,
                "graph": case.modes["graph"].model_copy(update={"status": "failed", "reason": "boom"}),
            }
        }
    )
    current = baseline_run.with_case(broken)
    already_failed = compare_runs(baseline_run, baseline_run).counts()["failed"]
    comparison = compare_runs(baseline_run, current)
    row = next(r for r in comparison.rows if r.key == (case.scenario, case.case_id, "graph"))
    assert {m.verdict for m in row.metrics} == {"failed"}
    assert "boom" in row.detail and row.current_status == "failed"
    assert comparison.counts()["failed"] == already_failed + len(COMPARED_METRICS)


def test_metric_without_samples_is_missing(baseline_run: RunRecord) -> None:
    key = min(comparable_keys(baseline_run), key=lambda k: pass_spread(baseline_run, k))  # the steadiest row
    case = next(c for c in baseline_run.cases if c.case_id == key[1] and c.scenario == key[0])
    result = case.modes[key[2]]
    samples = {k: v for k, v in result.samples.items() if k != "latency_s"}
    current = baseline_run.with_case(
        case.model_copy(update={"modes": {**case.modes, key[2]: result.with_samples(samples)}})
    )
    row = next(r for r in compare_runs(baseline_run, current).rows if r.key == key)
    assert row.metric("latency_us").verdict == "missing"
    assert row.metric("wall_us_per_launch").verdict == "same"


def test_largest_quickstart_comparison_flags_nothing_between_drifting_runs() -> None:
    """16 rows × 5 metrics at the sampler's max_samples (2000 per series) in 3 passes, one run drifting
    (its speed: benchmarks/speed_compare.py)."""
    base, current = (
        make_run(seed=0, n=2000, passes=3),
        make_run(seed=1, n=2000, passes=3, eager_drift=(1.35, 1.0, 1.0)),
    )
    assert directional(compare_runs(base, current)) == []


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
        assert samples_compared("wall_us_per_launch", base, base * 1.10, settings).verdict == "slower"
        assert samples_compared("wall_us_per_launch", base, base * 0.90, settings).verdict == "faster"


@pytest.mark.parametrize("noise", [0.005, 0.03])
def test_ten_percent_shift_between_independent_runs_is_flagged(noise: float) -> None:
    settings = CompareSettings(metrics=("wall_us_per_launch",))
    for seed in range(25):
        rng = np.random.default_rng(seed)
        base, cur = _noisy(rng, noise, 30), _noisy(rng, noise, 30) * 1.10
        assert samples_compared("wall_us_per_launch", base, cur, settings).verdict == "slower"


def test_small_significant_change_is_same() -> None:
    base = _noisy(np.random.default_rng(0), 0.002, 200)
    mc = samples_compared("wall_us_per_launch", base, base * 1.02, CompareSettings())
    assert mc.significant and mc.verdict == "same"


def test_too_few_noisy_samples_are_uncertain() -> None:
    rng = np.random.default_rng(3)
    base, cur = _noisy(rng, 0.3, 5), _noisy(rng, 0.3, 5) * 1.08
    mc = samples_compared("latency_us", base, cur, CompareSettings())
    assert not mc.significant and mc.verdict == "uncertain"


def test_per_metric_threshold() -> None:
    base = _noisy(np.random.default_rng(0), 0.002, 100)
    settings = CompareSettings(thresholds={"latency_us": 0.10})
    assert samples_compared("latency_us", base, base * 1.08, settings).verdict == "same"
    assert samples_compared("wall_us_per_launch", base, base * 1.08, settings).verdict == "slower"


@pytest.mark.parametrize(
    "significant, change, ci, expected",
    [
        (True, 0.10, (0.08, 0.12), "slower"),
        (True, -0.10, (-0.12, -0.08), "faster"),
        (True, 0.05, (0.04, 0.06), "slower"),  # exactly the threshold counts
        (True, 0.10, (0.001, 0.30), "slower"),  # the CI only has to exclude 0
        (True, 0.10, (-0.05, 0.30), "uncertain"),  # significant pooled, but the CI (drift) includes 0
        (True, -0.10, (-0.30, 0.02), "uncertain"),
        (True, 0.10, (0.0, 0.30), "uncertain"),  # entirely above 0 means above, not touching
        (False, 0.10, (0.02, 0.18), "uncertain"),  # CI above 0 but not significant
        (False, 0.07, (-0.01, 0.15), "uncertain"),
        (True, 0.03, (0.01, 0.04), "same"),  # real but smaller than the threshold, CI inside it
        (True, 0.03, (0.01, 0.08), "uncertain"),  # small, but the CI reaches beyond the threshold
        (True, 0.03, (-0.20, 0.25), "uncertain"),  # significant pooled, small, but drift makes the CI wide
        (False, 0.01, (-0.02, 0.03), "same"),  # CI inside ±threshold
        (False, 0.01, (-0.04, 0.09), "uncertain"),  # CI reaches beyond the threshold
        (False, math.nan, (math.nan, math.nan), "uncertain"),
        (True, 0.10, (math.nan, math.nan), "uncertain"),
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
        assert np.percentile(exact, [2.5, 50, 97.5]) == pytest.approx(
            np.percentile(brute, [2.5, 50, 97.5]), rel=0.01
        )


@pytest.mark.parametrize("count", [1, 2, 3, 16, 500])
def test_benjamini_hochberg_is_scipys_false_discovery_control(count: int) -> None:
    from scipy import stats

    rng = np.random.default_rng(count)
    p = rng.uniform(0, 1, count) ** 3
    p[: count // 3] = p[0]  # ties
    assert np.array_equal(benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"))


def test_ndtri_is_the_normal_quantile_scipy_stats_gives() -> None:
    from scipy import special, stats

    q = np.linspace(0.001, 0.999, 101)
    assert np.array_equal(special.ndtri(q), stats.norm.ppf(q))


def test_compare_of_runs_with_kept_splits_imports_neither_scipy_stats_nor_scikit_learn(tmp_path) -> None:
    """Their imports are most of a compare's start on 2 cores: rows of one pass (the bootstrap) need
    scipy.stats, and a series whose results.json kept no host-level split needs scikit-learn's fit.
    pandas comes only with a CSV: the table, JSON and markdown are written without it."""
    import subprocess
    import sys

    from launchbench.report.run_files import write_run_files

    runs = []
    for name in ("quickstart-a", "quickstart-b"):  # written again: schema 6, with their kept splits
        write_run_files(tmp_path / name, load_run(Path(__file__).parents[1] / "data" / "h200" / name))
        runs.append(str(tmp_path / name))
    code = (
        "import sys; from launchbench.cli import main\n"
        "def compare(fmt, out):\n"
        "    sys.argv = ['launchbench', 'compare', *runs, '--format', fmt, '-o', out]\n"
        "    try:\n        main()\n"
        "    except SystemExit: pass\n"
        "runs, (csv, json) = sys.argv[1:3], sys.argv[3:5]\n"
        "compare('json', json); without = 'pandas' not in sys.modules\n"
        "compare('csv', csv)\n"
        "print(without, 'scipy.stats' in sys.modules, 'sklearn' in sys.modules)"
    )
    command = [sys.executable, "-c", code, *runs, str(tmp_path / "c.csv"), str(tmp_path / "c.json")]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()
    assert out[-3:] == ["True", "False", "False"]
    assert (tmp_path / "c.csv").stat().st_size > 0 and (tmp_path / "c.json").stat().st_size > 0


def test_compare_samples_reports_passes() -> None:
    x = np.random.default_rng(0).lognormal(0, 0.02, 30)
    mc = samples_compared("wall_us_per_launch", x, x, CompareSettings(), [10, 10, 10], None)
    assert (mc.passes_baseline, mc.passes_current) == (3, 1)
    assert mc.verdict == "same"


def test_one_pass_a_side_uses_the_samples_bootstrap_and_no_p_value() -> None:
    """Samples of one pass are not independent draws: no test on them, only the bootstrap CI."""
    x = _noisy(np.random.default_rng(0), 0.01, 50)
    mc = samples_compared("wall_us_per_launch", x, x * 1.2, CompareSettings())
    assert mc.ratio_ci_low < 1.2 < mc.ratio_ci_high and mc.ratio_ci_low > 1.1
    assert math.isnan(mc.p_value) and mc.significant and mc.verdict == "slower"
    assert 0 < mc.mde < 0.05


def test_pass_level_test_and_mde() -> None:
    """Five passes a side, pass medians 2% apart (log sd): the t test over passes sees a 10% change;
    the MDE is (t(0.995, 8) + t(0.8, 8))·SE; a 1% change is not significant."""
    rng = np.random.default_rng(1)
    sizes = [20] * 5
    levels = np.exp(rng.normal(0, 0.02, 10))
    base = np.concatenate([np.full(20, 5.0 * level) for level in levels[:5]])
    cur = np.concatenate([np.full(20, 5.0 * level) for level in levels[5:]])
    settings = CompareSettings()
    shifted = samples_compared("wall_us_per_launch", base, cur * 1.10, settings, sizes, sizes)
    assert shifted.verdict == "slower" and shifted.p_value < 0.01
    logs_b, logs_c = np.log(levels[:5] * 5.0), np.log(levels[5:] * 5.0)
    pooled = (np.var(logs_b, ddof=1) + np.var(logs_c, ddof=1)) / 2
    se = math.sqrt(pooled * (1 / 5 + 1 / 5))
    from scipy import stats as sps

    assert shifted.mde == pytest.approx(math.expm1((sps.t.ppf(0.995, 8) + sps.t.ppf(0.8, 8)) * se), rel=1e-6)
    small = samples_compared("wall_us_per_launch", base, cur * 1.01, settings, sizes, sizes)
    assert small.p_value > 0.01 or abs(small.change) < 0.05


def test_a_prior_shrinks_a_rows_variance() -> None:
    """One row's passes barely differ; the prior (rows of its kind vary by 15%) widens its interval in
    proportion to the prior's weight, and a prior with infinite weight replaces its variance."""
    rng = np.random.default_rng(3)
    sizes = [20] * 5
    base = np.concatenate([rng.normal(5.0, 0.05, 20) for _ in sizes])
    cur = np.concatenate([rng.normal(6.0, 0.06, 20) for _ in sizes])
    settings = CompareSettings()
    own = samples_compared("wall_us_per_launch", base, cur, settings, sizes, sizes)
    weak = samples_compared("wall_us_per_launch", base, cur, settings, sizes, sizes, NoisePrior(0.15**2, 2.0))
    strong = samples_compared(
        "wall_us_per_launch", base, cur, settings, sizes, sizes, NoisePrior(0.15**2, math.inf)
    )
    assert own.verdict == "slower" and own.ratio_ci_low > 1.15
    widths = [m.ratio_ci_high / m.ratio_ci_low for m in (own, weak, strong)]
    assert widths[0] < widths[1] < widths[2]
    assert strong.mde > own.mde


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
    env = summarize_environment(baseline_run.environment)
    assert set(env) == {
        "gpu",
        "driver",
        "cuda_runtime",
        "cupy",
        "cupy_build",
        "cuda_bindings",
        "python",
        "cpu",
    }
    assert env["gpu"] == baseline_run.gpu_name
    assert summarize_environment({})["gpu"] == "unknown"
    assert summarize_environment(env) == env  # a summary summarizes to itself
    line = "NVIDIA H200 (driver 580.159.04, CUDA 13.2, CuPy 14.2.0)"
    assert describe_environment(baseline_run.environment) == describe_environment(env) == line
    assert describe_environment(env, "NCCL 2.27") == line[:-1] + ", NCCL 2.27)"
    assert not gpu_models_differ("NVIDIA H200", "nvidia  h200")
    assert gpu_models_differ("NVIDIA H200", OTHER_GPU)
    assert not gpu_models_differ("unknown", OTHER_GPU)


# ----------------------------------------------------------------------------------- host-bound rows


def test_cpu_time_is_host_bound_in_every_row_and_gpu_bound_rows_keep_their_own_interval() -> None:
    base = make_run(seed=0, passes=3)
    comparison = compare_runs(base, make_run(seed=1, passes=3, eager_drift=(1.0, 1.0, 1.35)))
    steady = [row for row in comparison.rows if row.mode == "graph" and row.case == "empty/length=1000"][0]
    wall = steady.metric("wall_us_per_launch")
    assert wall.ratio_ci_high / wall.ratio_ci_low < 1.05  # its own narrow interval
    assert stratum("cpu_us_per_launch", False) == ("cpu_us_per_launch", True)


def test_a_quiet_row_keeps_its_own_interval_among_noisy_ones() -> None:
    """Rows of one kind whose spreads differ widely give a prior of little weight: the quiet row's
    interval stays near its own, not the noisy rows' (a pooled floor made every row as wide as the
    noisiest)."""
    from launchbench.analysis.drift import RowVariance, fit_prior

    rng = np.random.default_rng(0)
    noisy = [RowVariance(float(v), 8) for v in (0.15 * np.exp(rng.normal(0, 0.8, 12))) ** 2]
    quiet = RowVariance(0.01**2, 8)
    prior = fit_prior([*noisy, quiet])
    assert prior is not None and prior.df < 8
    variance, df = prior.moderate(quiet)
    assert math.sqrt(variance) < 0.1 and df == prior.df + 8
    alike = fit_prior([RowVariance(0.02**2 * float(f), 4) for f in (0.9, 1.0, 1.1, 1.05, 0.95)])
    assert (
        alike is not None
        and math.isinf(alike.df)
        and math.sqrt(alike.variance) == pytest.approx(0.02, rel=0.2)
    )


# ------------------------------------------------- host-bound rows of separate runs moving together


def test_a_host_slower_in_the_whole_current_run_is_not_a_regression() -> None:
    """Quiet passes in both runs, but the current run met the host 25% slower throughout: every
    host-bound row moves by +25% with a tight pass spread. That common shift is run-to-run host noise
    (host_shifts): no row is slower, GPU-bound rows stay 'same', and the report names the shift."""
    base = make_run(seed=0, passes=5, eager_drift=(1.0,))
    current = make_run(seed=1, passes=5, eager_drift=(1.25,))
    comparison = compare_runs(base, current)
    assert directional(comparison) == []
    assert comparison.host_shifts["wall_us_per_launch"] == pytest.approx(math.log(1.25), abs=0.02)
    assert "wall_us_per_launch +25" in comparison.host_shift_note
    host_bound = {(c.case_id, m) for c in base.cases for m in c.modes if is_host_bound(c, m)}
    gpu_rows = {k: v for k, v in verdicts(comparison, "wall_us_per_iter").items() if k[1:] not in host_bound}
    assert set(gpu_rows.values()) == {"same"}


def test_one_host_bound_row_slower_on_a_quiet_host_is_flagged() -> None:
    """Quiet host in both runs, one eager row 30% slower: the common shift stays near 0 (a median over
    the host-bound rows), the row's own pass spread decides, and only that row is slower."""
    base = make_run(seed=0, passes=5, eager_drift=(1.0,))
    key = ("quickstart", "scale/length=100", "eager")
    current = scale_rows(make_run(seed=1, passes=5, eager_drift=(1.0,)), [key], 1.30)
    comparison = compare_runs(base, current)
    assert abs(comparison.host_shifts["wall_us_per_launch"]) < 0.02
    assert comparison.host_shift_note == ""
    slower = {k for k, v in verdicts(comparison, "wall_us_per_launch").items() if v == "slower"}
    assert slower == {key}


def test_paired_comparisons_have_no_host_shift() -> None:
    """ab's sides share the host's state round by round: no run-to-run component is added."""
    comparison = compare_paired(make_run(seed=0, passes=5), make_run(seed=1, passes=5, eager_drift=(1.25,)))
    assert comparison.host_shifts == {}


def test_p_values_are_adjusted_over_the_rows_of_each_metric() -> None:
    """Benjamini–Hochberg over the rows of a metric: a row significant on its own (p 0.004) among 15
    unchanged rows is not significant once adjusted; adjusted p values never fall below the raw ones."""
    threshold = 0.05

    def row(n: int, p: float) -> RowComparison:
        metric = MetricComparison(
            "wall_us_per_launch", "slower" if p < 0.01 else "same", 1.0, 1.2 if p < 0.01 else 1.0,
            1.2 if p < 0.01 else 1.0, 1.1 if p < 0.01 else 0.98, 1.3 if p < 0.01 else 1.02, p, p < 0.01,
            threshold,
        )  # fmt: skip
        return RowComparison("s", f"c{n}", "eager", "ok", "ok", (metric,))

    rows = [row(0, 0.004)] + [row(n, 0.2 + n / 30) for n in range(1, 16)]
    adjusted = adjust_across_rows(rows, CompareSettings())
    first = adjusted[0].metrics[0]
    assert first.p_value == pytest.approx(0.004 * 16) and not first.significant
    assert first.verdict == "uncertain"
    assert all(a.metrics[0].p_value >= r.metrics[0].p_value for a, r in zip(adjusted, rows))
    strong = adjust_across_rows([row(0, 1e-5)] + rows[1:], CompareSettings())
    assert strong[0].metrics[0].verdict == "slower"


def test_paired_rounds_are_trimmed_so_one_odd_round_does_not_set_the_interval() -> None:
    """Ten rounds, one of them a pair of workers that ran 25% apart: the 20%-trimmed mean ignores it and
    its variance (Yuen) stays near the other rounds' spread; with fewer than ten rounds nothing is
    trimmed."""
    rng = np.random.default_rng(3)
    rounds = 0.10 + 0.01 * rng.standard_normal(10)
    rounds[4] = -0.25
    center, variance = trimmed_rounds(rounds)
    plain = RowVariance.of(rounds)
    assert center == pytest.approx(np.mean(np.sort(rounds)[2:-2]))
    assert abs(center - 0.10) < 0.01 < abs(np.mean(rounds) - 0.10)
    assert variance.df == 5 and variance.variance < plain.variance / 20
    few = rounds[:9]
    center9, variance9 = trimmed_rounds(few)
    assert center9 == pytest.approx(np.mean(few)) and variance9 == RowVariance.of(few)


@pytest.mark.parametrize("passes", [1, 4])
def test_row_series_reads_what_the_pooled_samples_give(passes: int) -> None:
    """RowSeries takes each pass's median from the pass's own samples: the same samples, log pass
    medians and median as the pooled series gives (stats.log_pass_medians), also for a series one pass
    lacks (its sizes are unusable: one pass)."""
    from builders import make_case

    from launchbench.analysis.evidence import RowSeries
    from launchbench.analysis.stats import log_pass_medians, sorted_median
    from launchbench.results.schema import GPU, LATENCY, WALL

    case = make_case("empty", 8, np.random.default_rng(3), n=41, passes=passes)
    eager = case.modes["eager"]
    first = eager.passes[0]
    if passes > 1:  # the first pass without the other series
        first = first.model_copy(update={"samples": {WALL: first.samples[WALL]}})
    eager = eager.model_copy(update={"passes": [first, *eager.passes[1:]]})
    case = case.model_copy(update={"modes": {**case.modes, "eager": eager}})
    for mode in ("eager", "graph"):
        row = RowSeries(case, mode)
        for key in (WALL, GPU, LATENCY):
            samples = case.samples(mode, key)
            logs = log_pass_medians(samples, case.pass_sizes(mode))
            got_samples, got_logs, got_median = row.series(key)
            assert got_samples.tolist() == samples.tolist()
            assert got_median == sorted_median(np.sort(samples))
            assert got_logs is not None and logs is not None
            assert got_logs.tolist() == logs.tolist()
            lacks = passes > 1 and mode == "eager" and key != WALL  # its first pass has no such series
            assert len(got_logs) == (1 if lacks else passes)
