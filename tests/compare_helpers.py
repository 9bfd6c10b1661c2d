"""Helpers of the comparison tests (test_compare, test_gate, test_gate_blind, test_gate_coverage,
test_cli_compare): the ``baseline_run`` fixture (the real H200 quickstart run, where present, and a
synthetic run shaped like it), the committed H200 runs and the row selections and rescalings the tests
build their current runs from, and the command-line helpers they share (``invoke``, ``save``, the
``no_step_summary`` fixture, used autouse by re-export)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest
from builders import make_run
from click.testing import CliRunner, Result

from launchbench.analysis.compare import COMPARABLE_STATUSES, DEFAULT_THRESHOLD, Comparison, RowKey
from launchbench.analysis.drift import is_host_bound
from launchbench.analysis.stats import pass_medians
from launchbench.cli import cli
from launchbench.results.schema import WALL, CaseResult, RunRecord
from launchbench.results.store import load_run, write_run

H200 = Path(__file__).parent / "data" / "h200"
REAL_BASELINE = H200 / "quickstart-a"  # first of two back-to-back quickstart runs
REAL_REPEAT = H200 / "quickstart-b"  # the second one
REAL_LONGER = H200 / "quickstart-longer"  # same case names, chains 10% longer (rounded up)
OTHER_GPU = "NVIDIA A100-SXM4-80GB"
STABLE_SPREAD = DEFAULT_THRESHOLD  # a row whose pass medians differ by less than this is "steady"


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """No $GITHUB_STEP_SUMMARY from the machine running the tests (a module re-exports it to use it)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def save(tmp_path: Path, name: str, run: RunRecord) -> str:
    """A run directory holding results.json, all that compare, check and run --resume read."""
    write_run(tmp_path / name, run)
    return str(tmp_path / name)


def real(path: Path) -> bool:
    return (path / "results.json").is_file()


def load_baseline_run() -> RunRecord:
    if real(REAL_BASELINE):
        return load_run(REAL_BASELINE)
    return make_run(passes=3)


@pytest.fixture(params=["real", "synthetic"])
def baseline_run(request: pytest.FixtureRequest) -> RunRecord:
    """Both the real H200 quickstart run (where present; else the synthetic one again) and a synthetic
    multi-pass run of the same shape: the data-driven tests must hold for both."""
    return load_baseline_run() if request.param == "real" else make_run(passes=3)


def needs_real(*paths: Path) -> pytest.MarkDecorator:
    missing = [str(p.relative_to(Path(__file__).parent) / "results.json") for p in paths if not real(p)]
    return pytest.mark.skipif(bool(missing), reason=f"real H200 runs not present yet: {', '.join(missing)}")


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


def case_of(run: RunRecord, key: RowKey) -> CaseResult:
    case = run.case(key[0], key[1])
    assert case is not None, key
    return case


def pass_spread(run: RunRecord, key: RowKey, metric: str = "wall_us_per_launch") -> float:
    """max/min − 1 of the row's pass medians of a metric (0 with a single pass)."""
    case = case_of(run, key)
    values = case.metric_samples(key[2], metric)
    sizes = case.pass_sizes(key[2])
    if not sizes or sum(sizes) != len(values) or len(values) == 0:
        return 0.0
    medians = pass_medians(values, sizes)
    return max(medians) / min(medians) - 1


def chosen_keys(run: RunRecord) -> set[RowKey]:
    """The rows to scale: every comparable graph row bound by the GPU (not host_bound) whose passes
    agree (pass medians of the wall time within STABLE_SPREAD). On synthetic data and on the committed
    H200 run that is every graph row but the one-launch empty chain (host-bound, its passes far apart)."""
    keys = comparable_keys(run)
    cases = {(c.scenario, c.case_id): c for c in run.cases}
    chosen = {
        k
        for k in keys
        if k[2] == "graph"
        and not is_host_bound(cases[k[:2]], "graph")
        and pass_spread(run, k) < STABLE_SPREAD
    }
    assert chosen and len(chosen) < len(keys), "the data must have scaled and unscaled rows"
    return chosen


def drifting_eager_key(run: RunRecord) -> RowKey:
    """The eager row whose pass medians differ most."""
    return max((k for k in comparable_keys(run) if k[2] == "eager"), key=lambda k: pass_spread(run, k))


def scale_rows(run: RunRecord, keys: Iterable[RowKey], factor: float) -> RunRecord:
    """A copy of the run whose raw samples (every series) in the given rows are multiplied by factor."""
    wanted = set(keys)
    cases = []
    for case in run.cases:
        modes = {}
        for mode, result in case.modes.items():
            if (case.scenario, case.case_id, mode) in wanted:
                samples = {k: [v * factor for v in values] for k, values in result.samples.items()}
                result = result.with_samples(samples)
            modes[mode] = result
        cases.append(case.model_copy(update={"modes": modes}))
    return run.model_copy(update={"cases": cases})


def with_gpu(run: RunRecord, name: str) -> RunRecord:
    gpu = run.environment.gpu.model_copy(update={"name": name})
    return run.model_copy(update={"environment": run.environment.model_copy(update={"gpu": gpu})})


def verdicts(comparison: Comparison, metric: str) -> dict[RowKey, str]:
    return {row.key: row.metric(metric).verdict for row in comparison.rows}


def directional(comparison: Comparison) -> list[str]:
    """Every (row, metric) called slower or faster, as readable lines."""
    return [
        f"{row.label} {mc.metric}: {mc.verdict} {mc.change * 100:+.1f}% "
        f"(CI {mc.change_ci[0] * 100:+.1f}%…{mc.change_ci[1] * 100:+.1f}%, p={mc.p_value:.2g})"
        for row in comparison.rows
        for mc in row.metrics
        if mc.verdict in ("slower", "faster")
    ]
