"""The floor report's steps paired round by round (launchbench/report/floor_paired.py): on a host that
changes state between rounds, on the committed H200 floor run, and where no rounds are shared."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from launchbench.backend.floor.base import LayerWorkloads
from launchbench.measure.precision import median_ci
from launchbench.measure.sampler import SAMPLES_PER_ROUND, ModeSamples, SamplingOutcome
from launchbench.report.floor import floor_report, render_markdown
from launchbench.report.floor_paired import MIN_ROUNDS, paired
from launchbench.results.schema import CaseResult, HostData
from launchbench.results.store import load_run
from launchbench.run.floor import FloorRequest, built_in_scenario, case_result, plan
from launchbench.scenario.core import MeasureSettings
from launchbench.scenario.floor import Floor

ROOT = Path(__file__).resolve().parents[2]
US = 1e-6
# the host's state in each round: every layer costs this much more per launch in that round
STATES = [0.0, 0.6, 0.6, 0.0, 2.0, 0.0, 0.6, 2.0, 0.0, 0.0, 0.6, 2.0]


def _samples(base_us: float, jitter_us: float) -> ModeSamples:
    """SAMPLES_PER_ROUND samples a round, each the layer's cost plus the round's host state plus a
    small jitter that differs between samples."""
    wall = [
        (base_us + state + jitter_us * ((k * 7) % 5 - 2)) * US
        for state in STATES
        for k in range(SAMPLES_PER_ROUND)
    ]
    return ModeSamples(
        iters_per_sample=100, wall=wall, cpu=wall, gpu=wall, latency=[1e-5] * len(wall), target_met=True
    )


def _case(layer: str, eager_us: float, graph_us: float, pid: int) -> CaseResult:
    spec = Floor(layers=[layer], args=[0])
    request = FloorRequest(spec, built_in_scenario(spec), MeasureSettings())
    case = plan(spec)[0]
    modes = {
        f"{case.case_id}|eager": _samples(eager_us, 0.01),
        f"{case.case_id}|graph": _samples(graph_us, 0.02),
    }
    outcome = SamplingOutcome(modes, False, 0.0, None, ())
    return case_result(request, case, LayerWorkloads({}, 1), None, outcome, HostData(pid=pid))


def test_a_step_paired_by_round_leaves_the_host_state_out():
    """The host adds 0, 0.6 or 2 µs in each round to every layer: the paired step is what the layer
    adds within the jitter, and its interval is a small part of either layer's own."""
    raw, c = _case("cupy_raw", 5.3, 1.6, pid=7), _case("c", 3.7, 1.1, pid=7)
    step = paired(raw, "eager", c, "eager")
    assert step is not None and step.rounds == len(STATES)
    assert step.median_s == pytest.approx(1.6 * US, abs=0.02 * US)
    assert step.ci_s[0] <= step.median_s <= step.ci_s[1] and step.ci_s[1] - step.ci_s[0] < 0.05 * US
    own = median_ci(raw.modes["eager"].samples["wall_s_per_iter"])
    assert own[1] - own[0] > 0.5 * US  # the host's states spread each layer's own samples
    saves = paired(raw, "eager", raw, "graph")
    assert saves is not None and saves.median_s == pytest.approx(3.7 * US, abs=0.03 * US)


def test_the_estimate_is_the_median_of_the_round_differences_with_its_order_statistic_interval():
    raw, c = _case("cupy_raw", 5.3, 1.6, pid=7), _case("c", 3.7, 1.1, pid=7)
    k = SAMPLES_PER_ROUND

    def rounds(case: CaseResult) -> list[float]:
        values = case.modes["eager"].samples["wall_s_per_iter"]
        return [statistics.median(values[i : i + k]) for i in range(0, len(values), k)]

    differences = [a - b for a, b in zip(rounds(raw), rounds(c), strict=True)]
    step = paired(raw, "eager", c, "eager")
    assert step is not None
    assert step.median_s == statistics.median(differences) and step.ci_s == median_ci(differences)


def test_layers_of_different_processes_or_too_few_rounds_are_not_paired():
    raw, c_apart = _case("cupy_raw", 5.3, 1.6, pid=7), _case("c", 3.7, 1.1, pid=8)
    assert paired(raw, "eager", c_apart, "eager") is None
    short = _case("c", 3.7, 1.1, pid=7)
    few = (MIN_ROUNDS - 1) * SAMPLES_PER_ROUND
    eager = short.modes["eager"]
    cut = eager.model_copy(
        update={
            "passes": [
                p.model_copy(update={"samples": {"wall_s_per_iter": p.samples["wall_s_per_iter"][:few]}})
                for p in eager.passes
            ]
        }
    )
    short = short.model_copy(update={"modes": {**short.modes, "eager": cut}})
    assert paired(raw, "eager", short, "eager") is None
    assert paired(raw, "eager", _case("c", 3.7, 1.1, pid=7), "eager") is not None


def test_the_h200_floor_run_gives_paired_steps_and_torch_apart_its_difference_of_medians():
    """results/floor-h200: every layer but torch sampled in one process (pid 2566), torch in its own."""
    report = floor_report(load_run(ROOT / "results" / "floor-h200"))
    rows = {(r.layer, r.args): r for r in report.rows}
    stream = rows[("cupy_raw_stream", 4)]
    assert stream.below == "cupy_raw" and stream.above_ci_s is not None
    assert stream.above_s == pytest.approx(0.15 * US, abs=0.005 * US)
    assert stream.above_ci_s[0] > 0  # stream= costs something above positional: the interval says so
    torch = rows[("torch", None)]
    assert torch.above_ci_s is None and torch.above_floor_ci_s is None  # another process: no shared rounds
    assert torch.eager_s is not None and rows[("c", 0)].eager_s is not None
    assert torch.above_s == pytest.approx(torch.eager_s - rows[("c", 0)].eager_s)
    assert torch.saves_ci_s is not None  # its eager and graph modes share its own process's rounds
    text = render_markdown(report)
    assert (
        "| cupy_raw_stream | 4 | 6.92 | 2.77 (1.90 to 3.06) | 0.15 (0.05 to 0.31) | 2% | cupy_raw |" in text
    )
    assert "| torch | — | 7.74 | 3.82 | 3.82 | 49% | c | 4.28 | 3.47 (3.33 to 4.05) | 7.72 |" in text


def test_the_figure_draws_each_paired_step_s_interval_at_its_bar_s_top():
    from matplotlib.container import ErrorbarContainer

    from launchbench.report.plots.floor import figure_floor

    report = floor_report(load_run(ROOT / "results" / "floor-h200"))
    fig = figure_floor(report)
    assert fig is not None
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    paired_rows = [r for r in report.rows if r.above_ci_s is not None and r.skipped is None]
    assert len(bars) == len(paired_rows) > 0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "95% CI of the top step, paired by round" in labels
