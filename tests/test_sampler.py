"""The sampling loop and stopping rules, driven by scripted workloads and a stepping clock."""

from fakes import ScriptedMonitor, ScriptedWorkload, SteppingClock

from launchbench.measure.clock import ClockReading
from launchbench.measure.sampler import SAMPLES_PER_ROUND, Sampler
from launchbench.measure.stopping import StopRule
from launchbench.scenario.core import MeasureSettings


def settings(**kw):
    base = {
        "target_noise": 0.01,
        "min_samples": 10,
        "max_time": 5.0,
        "warmup_time": 0.05,
        "sample_time": 0.002,
    }
    base.update(kw)
    return MeasureSettings(**base)


def test_quiet_workload_stops_at_min_samples_with_target_met():
    clock = SteppingClock()
    work = {
        "eager": ScriptedWorkload(clock, 10, 60e-6, noise=0.001),
        "graph": ScriptedWorkload(clock, 10, 6e-6, noise=0.001, seed=3),
    }
    out = Sampler(settings(), clock).run(work)
    assert not out.budget_hit
    for mode in ("eager", "graph"):
        samples = out.modes[mode]
        assert samples.target_met
        assert len(samples.wall) == 10  # two rounds of five
        assert samples.iters_per_sample * (60e-6 if mode == "eager" else 6e-6) >= 0.002 * 0.99


def test_noisy_workload_runs_until_the_budget_and_says_so():
    clock = SteppingClock()
    work = {"eager": ScriptedWorkload(clock, 1, 6e-6, noise=0.5, latency_extra=0)}
    out = Sampler(settings(max_time=0.5, sample_time=0.01), clock).run(work)
    assert out.budget_hit
    assert not out.modes["eager"].target_met
    assert clock.now >= 0.5


def test_sample_cap_stops_sampling():
    clock = SteppingClock()
    work = {"eager": ScriptedWorkload(clock, 1, 6e-6, noise=0.5)}
    out = Sampler(settings(max_samples=20, max_time=1000), clock).run(work)
    assert len(out.modes["eager"].wall) == 20
    assert not out.modes["eager"].target_met and not out.budget_hit


def test_rounds_interleave_so_drift_hits_both_modes():
    clock = SteppingClock()
    eager = ScriptedWorkload(clock, 1, 1e-3, noise=0.0, drift=0.2)
    graph = ScriptedWorkload(clock, 1, 1e-3, noise=0.0, drift=0.2, seed=4)
    out = Sampler(settings(min_samples=30, target_noise=0.5, sample_time=1e-3), clock).run(
        {"eager": eager, "graph": graph}
    )
    e, g = out.modes["eager"].wall, out.modes["graph"].wall
    assert len(e) == len(g) == 30
    # with A B / B A rounds, drift adds the same on average: medians within a small fraction
    assert abs(sorted(e)[15] / sorted(g)[15] - 1) < 0.02
    # tighter than sampling one mode, then the other, can reach (1.2% apart; interleaved 0.2%)
    assert abs(sorted(e)[15] / sorted(g)[15] - 1) < 0.005


def test_sampling_rounds_alternate_between_the_modes():
    clock = SteppingClock()
    order: list[str] = []
    work = {}
    for mode, seed in (("eager", 0), ("graph", 4)):
        workload = ScriptedWorkload(clock, 1, 1e-3, noise=0.0, seed=seed)
        run_latency = workload.run_latency

        def logged(mode: str = mode, run_latency=run_latency) -> float:  # one latency sample per sample taken
            order.append(mode)
            return run_latency()

        workload.run_latency = logged  # type: ignore[method-assign]
        work[mode] = workload
    Sampler(settings(min_samples=20, target_noise=0.5, sample_time=1e-3), clock).run(work)
    blocks = [order[i : i + SAMPLES_PER_ROUND] for i in range(0, len(order), SAMPLES_PER_ROUND)]
    assert len(blocks) >= 4 and all(
        len(set(block)) == 1 for block in blocks
    )  # a mode's samples come in blocks
    expected = [
        mode
        for i in range(len(blocks) // 2)
        for mode in (("eager", "graph") if i % 2 == 0 else ("graph", "eager"))
    ]
    assert [block[0] for block in blocks] == expected  # rounds A B, B A, A B, ...


def test_throttled_rounds_are_counted():
    clock = SteppingClock()
    readings = [ClockReading(1980, 3201)] * 6 + [ClockReading(1500, 3201, ("sw_power_cap",))] * 100
    monitor = ScriptedMonitor(readings)
    work = {"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.001)}
    out = Sampler(settings(min_samples=20), clock, monitor).run(work)
    assert out.modes["eager"].throttled >= SAMPLES_PER_ROUND
    assert out.throttle_reasons == ("sw_power_cap",)


def test_clock_settling_waits_for_stable_readings():
    clock = SteppingClock()
    readings = [
        ClockReading(345, 3201),
        ClockReading(1200, 3201),
        ClockReading(1980, 3201),
        ClockReading(1980, 3201),
    ]
    monitor = ScriptedMonitor(readings)
    work = {"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.001)}
    out = Sampler(settings(), clock, monitor).run(work)
    assert out.settle_s > 0
    assert monitor.index >= 4


def test_progress_reports_reach_one():
    clock = SteppingClock()
    seen = []
    Sampler(settings(), clock).run({"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.001)}, seen.append)
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


def test_stop_rule():
    rule = StopRule(target_noise=0.01, min_samples=5, max_samples=8)
    assert not rule.precise_enough([1.0] * 4)
    assert rule.precise_enough([1.0] * 5)
    assert not rule.precise_enough([1.0, 2.0, 1.0, 2.0, 1.0, 2.0])
    assert rule.full([1.0] * 8)


def test_a_budget_spent_before_sampling_still_gives_one_round():
    clock = SteppingClock()
    work = {
        "eager": ScriptedWorkload(clock, 1, 0.2, noise=0.01),
        "graph": ScriptedWorkload(clock, 1, 0.1, noise=0.01, seed=5),
    }
    out = Sampler(settings(max_time=0.1, warmup_time=0.0, sample_time=0.001), clock).run(work)
    assert out.budget_hit
    assert all(len(out.modes[m].wall) == SAMPLES_PER_ROUND for m in ("eager", "graph"))
