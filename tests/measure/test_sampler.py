"""The sampling loop and stopping rules, driven by scripted workloads and a stepping clock."""

import numpy as np
from fakes import ScriptedMonitor, ScriptedWorkload, SteppingClock

from launchbench.measure.clock import ClockReading
from launchbench.measure.sampler import SAMPLES_PER_ROUND, WARMUP_BATCHES, Sampler
from launchbench.measure.stopping import (
    FirstOf,
    ModeSpread,
    NoiseTarget,
    Plateau,
    SampleCap,
    SamplingView,
    SpreadShare,
    StopRule,
    TimeBudget,
    default_rule,
    plateau_rule,
    relative_width,
    spread_rule,
)
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


# Every sampling decision of these scripted runs, pinned: for each run the clock at its end, whether the
# budget ended it, the settling time, the throttle reasons and, per mode, (iterations per sample, samples,
# target met, throttled samples, the sum of the wall samples). The figures are those of the warm-up that
# ends once the first batch and WARMUP_BATCHES whole samples after it are done (at most warmup_time): it
# draws fewer batches from the scripted workloads, so their noise, and the samples after it, differ.
DECISIONS = {
    "quiet": (
        0.063226794,
        False,
        0.0,
        (),
        {"eager": (37, 10, True, 0, 0.000599970687), "graph": (367, 10, True, 0, 6.0002656e-05)},
    ),
    "noisy": (0.510379103, True, 0.0, (), {"eager": (2263, 35, False, 0, 0.000208938663)}),
    "mixed": (
        0.104940537,
        False,
        0.0,
        (),
        {"eager": (12, 15, True, 0, 0.001493763223), "graph": (192, 40, True, 0, 0.000395897426)},
    ),
    "cap": (
        0.104928633,
        False,
        0.0,
        (),
        {"eager": (11, 40, False, 0, 0.004008805886), "graph": (11, 40, False, 0, 0.00399886011)},
    ),
    "throttled": (
        0.114131607,
        False,
        0.00930162,
        ("sw_power_cap",),
        {"eager": (22, 20, True, 15, 0.001999074258), "graph": (106, 20, True, 15, 0.000399893921)},
    ),
}


def _scripted_runs():
    quiet = {
        "target_noise": 0.01,
        "min_samples": 10,
        "max_time": 5.0,
        "warmup_time": 0.05,
        "sample_time": 0.002,
    }
    yield "quiet", quiet, [(10, 60e-6, 0.001, 0), (10, 6e-6, 0.001, 3)], None
    noisy = {**quiet, "max_time": 0.5, "sample_time": 0.01}
    yield "noisy", noisy, [(1, 6e-6, 0.5, 0)], None
    mixed = {
        "target_noise": 0.02,
        "latency_target_noise": 0.05,
        "min_samples": 10,
        "max_time": 2.0,
        "warmup_time": 0.01,
        "sample_time": 0.001,
    }
    yield "mixed", mixed, [(1, 1e-4, 0.05, 1), (1, 1e-5, 0.2, 2)], None
    cap = {**mixed, "target_noise": 0.001, "latency_target_noise": 0.03, "max_samples": 40, "max_time": 100.0}
    yield "cap", cap, [(1, 1e-4, 0.1, 5), (1, 1e-4, 0.01, 6)], None
    readings = (
        [ClockReading(345, 3201), ClockReading(1200, 3201)]
        + [ClockReading(1980, 3201)] * 5
        + [ClockReading(1500, 3201, ("sw_power_cap",))] * 500
    )
    throttled = {**quiet, "min_samples": 20, "max_time": 3.0}
    yield "throttled", throttled, [(1, 1e-4, 0.01, 0), (1, 2e-5, 0.05, 9)], readings


def test_every_sampling_decision_is_the_pinned_one():
    for name, kw, works, readings in _scripted_runs():
        clock = SteppingClock()
        work = {
            mode: ScriptedWorkload(clock, launches, per_iter, noise=noise, seed=seed)
            for mode, (launches, per_iter, noise, seed) in zip(("eager", "graph"), works)
        }
        monitor = ScriptedMonitor(list(readings)) if readings else None
        out = Sampler(MeasureSettings(**kw), clock, monitor).run(work)
        modes = {
            m: (s.iters_per_sample, len(s.wall), s.target_met, s.throttled, round(sum(s.wall), 12))
            for m, s in out.modes.items()
        }
        got = (round(clock.now, 9), out.budget_hit, round(out.settle_s, 9), out.throttle_reasons, modes)
        assert got == DECISIONS[name], name


def test_the_sampler_steps_round_by_round_as_it_runs_whole():
    kw = {"target_noise": 0.02, "min_samples": 10, "max_time": 2.0, "warmup_time": 0.01, "sample_time": 0.001}
    outcomes = []
    for stepped in (False, True):
        clock = SteppingClock()
        work = {"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.05, seed=1)}
        sampler = Sampler(MeasureSettings(**kw), clock)
        if stepped:
            sampler.start(work)
            while not sampler.done:
                sampler.round()
            out = sampler.finish()
        else:
            out = sampler.run(work)
        outcomes.append((clock.now, out.modes["eager"].wall))
    assert outcomes[0] == outcomes[1]


def test_the_named_rules():
    quiet = SamplingView(wall=[1.0] * 10, latency=[2.0] * 10)
    noisy = SamplingView(wall=[1.0, 2.0] * 5, latency=[2.0] * 10)
    target = NoiseTarget(StopRule(0.01, 10, 100), StopRule(0.03, 10, 100))
    assert target.finished(quiet) and not target.finished(noisy)
    assert not target.finished(SamplingView(wall=[1.0] * 10, latency=[1.0, 2.0] * 5))  # latency counts too
    assert SampleCap(10).finished(quiet) and not SampleCap(11).finished(quiet)
    assert not TimeBudget(1.0).finished(SamplingView((), spent=5.0, rounds=0))  # one round at least
    assert TimeBudget(1.0).finished(SamplingView((), spent=1.0, rounds=1))
    assert not TimeBudget(1.0).finished(SamplingView((), spent=0.9, rounds=3))
    assert FirstOf((target, SampleCap(10))).finished(noisy)
    assert not FirstOf((target, SampleCap(11))).finished(noisy)
    assert [r.name for r in default_rule(MeasureSettings()).rules] == ["noise", "samples"]
    assert [r.name for r in plateau_rule(MeasureSettings(), 5).rules] == ["noise", "samples", "plateau"]


def test_the_plateau_rule_stops_when_the_interval_no_longer_narrows():
    rule = Plateau(min_samples=10, batches=3, batch=5, tolerance=0.05)
    rng = np.random.default_rng(0)
    first = list(1 + 0.1 * rng.standard_normal(25))
    widening = [*first, *[0.8, 1.2] * 7, 1.0]  # the last three batches spread wider than the first 25
    assert len(widening) == 40 and relative_width(widening) > relative_width(first)
    assert rule.finished(SamplingView(widening))
    assert not rule.finished(SamplingView(widening[:24]))  # too short to look back three batches past ten
    narrowing = [*first, *(1 + 0.1 * rng.standard_normal(15))]
    assert relative_width(narrowing) < 0.95 * relative_width(first)
    assert not rule.finished(SamplingView(narrowing))
    assert not rule.finished(SamplingView(widening, latency=narrowing))  # both series must have plateaued
    loose = Plateau(min_samples=10, batches=3, batch=5, tolerance=0.5)  # a 50% narrowing counts as flat
    assert loose.finished(SamplingView(narrowing))


def test_the_plateau_rule_ends_sampling_before_the_cap_with_a_scripted_clock():
    kw = {"target_noise": 0.001, "min_samples": 10, "max_samples": 2000, "max_time": 1000.0}
    kw |= {"warmup_time": 0.0, "sample_time": 1e-3}
    counts = {}
    for name in ("default", "plateau"):
        clock = SteppingClock()
        work = {"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.3, seed=2)}
        settings = MeasureSettings(**kw)
        rule = plateau_rule(settings, SAMPLES_PER_ROUND) if name == "plateau" else None
        out = Sampler(settings, clock, rule=rule).run(work)
        counts[name] = len(out.modes["eager"].wall)
        assert not out.modes["eager"].target_met and not out.budget_hit
        if name == "plateau":
            wall, plateau = out.modes["eager"].wall, rule.rules[-1]
            assert plateau.finished(SamplingView(wall, out.modes["eager"].latency))
            shorter = SamplingView(wall[:-SAMPLES_PER_ROUND], out.modes["eager"].latency[:-SAMPLES_PER_ROUND])
            assert not plateau.finished(shorter)  # it stopped at the first round that had plateaued
    assert counts["default"] == 2000
    assert 10 < counts["plateau"] < 2000


def test_warm_up_ends_after_the_first_batch_and_a_few_whole_samples():
    clock = SteppingClock()
    work = ScriptedWorkload(clock, 1, 1e-4)
    sampler = Sampler(settings(warmup_time=10.0, sample_time=1e-3), clock)
    sampler._warm_up(work)
    # 1, 2, 4, 8 iterations (under a sample), then 16 (1.6 ms, a whole sample) WARMUP_BATCHES times
    # counted from the first batch: it ends long before its 10 s bound
    assert work.batches[:5] == [1, 2, 4, 8, 16]
    assert all(b == 16 for b in work.batches[4:])
    assert len(work.batches) == WARMUP_BATCHES + 2
    assert clock.now < 0.01


def test_warm_up_stops_at_its_time_bound_on_a_slow_workload():
    clock = SteppingClock()
    work = ScriptedWorkload(clock, 1, 0.05)  # every batch longer than the bound
    Sampler(settings(warmup_time=0.01, sample_time=1e-3), clock)._warm_up(work)
    assert work.batches == [1]


def test_the_spread_rule_stops_once_the_pass_is_precise_against_the_spread():
    rule = SpreadShare({"eager": ModeSpread(0.10, 0.10)}, min_samples=5)
    tight = [1.0 + 0.001 * i for i in range(10)]
    assert rule.finished(SamplingView(tight, tight, mode="eager"))
    assert not rule.finished(SamplingView(tight[:4], tight[:4], mode="eager"))  # below min_samples
    wide = [1.0, 1.5, 0.7, 1.2, 0.9, 1.4]
    assert not rule.finished(SamplingView(wide, tight, mode="eager"))  # 0.25 × 10% not met
    assert not rule.finished(SamplingView(tight, tight, mode="graph"))  # no spread known for graph
    # a series with samples but no known spread waits; one not recorded has nothing to wait for
    no_latency = SpreadShare({"eager": ModeSpread(0.10, None)}, min_samples=5)
    assert not no_latency.finished(SamplingView(tight, tight, mode="eager"))
    assert no_latency.finished(SamplingView(tight, (), mode="eager"))
    cpu = SpreadShare({"eager": ModeSpread(0.10, 0.10, cpu=0.001)}, min_samples=5)
    assert not cpu.finished(SamplingView(tight, tight, mode="eager", cpu=tight))


def test_the_spread_rule_ends_sampling_early_only_where_a_spread_is_known():
    kw = {"target_noise": 0.0001, "min_samples": 10, "max_time": 5.0, "warmup_time": 0.0, "sample_time": 1e-3}
    done = {}
    for spreads in ({}, {"eager": ModeSpread(0.2, 0.2, 0.2, 0.2)}):
        clock = SteppingClock()
        work = {"eager": ScriptedWorkload(clock, 1, 1e-4, noise=0.05)}
        rule = spread_rule(MeasureSettings(**kw), spreads) if spreads else None
        out = Sampler(MeasureSettings(**kw), clock, rule=rule).run(work)
        done[bool(spreads)] = (len(out.modes["eager"].wall), out.budget_hit, out.modes["eager"].target_met)
    assert done[False][0] > 100 and not done[False][2]  # 0.01% is out of reach: the cap or budget ends it
    assert done[True] == (15, False, False)  # 5% noise against a 20% spread: three rounds are enough


def test_each_round_asks_every_rule_once():
    """The modes still pending are asked once per round (kept until the round's samples change them), so
    a round and the ``done`` after it do not evaluate each mode's rule twice."""
    from dataclasses import dataclass, field
    from typing import ClassVar

    @dataclass
    class Counting:
        name: ClassVar[str] = "counting"
        inner: object
        asked: list[str] = field(default_factory=list)

        def finished(self, view):
            self.asked.append(view.mode)
            return self.inner.finished(view)

    clock = SteppingClock()
    work = {"eager": ScriptedWorkload(clock, 1, 6e-6, noise=0.5), "graph": ScriptedWorkload(clock, 1, 2e-6)}
    rule = Counting(FirstOf((NoiseTarget.of(settings()), SampleCap(10_000))))
    sampler = Sampler(settings(max_time=0.2), clock, rule=rule)
    out = sampler.run(work)
    assert out.budget_hit and sampler.rounds > 3
    assert rule.asked.count("eager") == sampler.rounds + 1  # once at the start, once after each round
