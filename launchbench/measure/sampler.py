"""The sampling loop: warm-up, clock settling, calibration, then eager and graph sampled in interleaved
rounds (A B A B …) until each is precise enough or the case's time budget is spent.

A workload knows how to time a batch of chain iterations (its own loop keeps the launch queue bounded)
and one launch-to-completion iteration; this module decides how many, how often and when to stop.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from launchbench.measure.clock import Clock, ClockMonitor, ClockReading
from launchbench.measure.stopping import NoiseTarget, SamplingView, StoppingRule, TimeBudget, default_rule
from launchbench.scenario.core import MeasureSettings

SAMPLES_PER_ROUND = 5
MAX_ITERS_PER_SAMPLE = 1_000_000
SETTLE_TOLERANCE = 0.02  # SM clock readings within 2% of each other count as settled
MAX_SETTLE_TIME = 3.0
WARMUP_BATCHES = 3  # batches after the first that warming up takes at least (the last a whole sample)


@dataclass(frozen=True)
class BatchTiming:
    """Totals over one batch of iterations (seconds)."""

    iters: int
    wall_s: float
    cpu_s: float
    gpu_s: float | None


class Workload(Protocol):
    launches_per_iter: int

    def run_batch(self, iters: int) -> BatchTiming:
        """Launch ``iters`` chain iterations back to back, wait for completion, return the totals."""

    def run_latency(self) -> float:
        """Launch one iteration on an idle stream and return launch-to-completion wall time."""


@dataclass
class ModeSamples:
    """Per-iteration samples of one mode (seconds), and how they were taken."""

    iters_per_sample: int = 1
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    gpu: list[float] = field(default_factory=list)
    latency: list[float] = field(default_factory=list)
    throttled: int = 0
    target_met: bool = False
    sm_mhz: list[float] = field(default_factory=list)  # SM clock read after each round of this mode
    throttle_reasons: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class SamplingOutcome:
    modes: dict[str, ModeSamples]
    budget_hit: bool
    settle_s: float
    clocks: ClockReading | None
    throttle_reasons: tuple[str, ...]


@dataclass(frozen=True)
class SamplerPhases:
    """Seconds one case's sampling spent in each phase, by its clock: warming up, settling the clocks
    (which calibrates once itself), calibrating every mode, and the sampling rounds."""

    warmup_s: float
    settle_s: float
    calibrate_s: float
    sampling_s: float


Progress = Callable[[float], None]


def _noop(_fraction: float) -> None:
    return None


class Sampler:
    """One case's sampling: ``start`` warms up, settles the clocks and calibrates; ``round`` samples one
    round; ``finish`` gives the outcome (``run`` does all three). The time budget counts the time spent
    inside the sampler's own calls (preparation and rounds), not the time between them, so a sampling
    whose rounds alternate with another process's spends its own budget, not the pair's.

    ``rule`` decides when a mode's sampling stops (by default its noise target or its sample cap:
    stopping.default_rule); the case ends when every mode has stopped or its TimeBudget is spent."""

    def __init__(
        self,
        settings: MeasureSettings,
        clock: Clock,
        monitor: ClockMonitor | None = None,
        rule: StoppingRule | None = None,
    ):
        self.settings = settings
        self.clock = clock
        self.monitor = monitor
        self.rule = rule or default_rule(settings)
        self.target = NoiseTarget.of(settings)
        self.budget = TimeBudget(settings.max_time)
        self.workloads: Mapping[str, Workload] = {}
        self.progress: Progress = _noop
        self.samples: dict[str, ModeSamples] = {}
        self.reasons: set[str] = set()
        self.reading: ClockReading | None = None
        self.settle_s = 0.0
        self.rounds = 0
        self.spent = 0.0
        self._prepared = (0.0, 0.0, 0.0)  # warm-up, settling and calibration seconds
        self._sampling_s = 0.0
        self._pending_now: list[str] | None = None  # the modes still pending, as the rules last said

    def run(self, workloads: Mapping[str, Workload], progress: Progress = _noop) -> SamplingOutcome:
        """Sample every mode until each is precise enough or the budget is spent."""
        self.start(workloads, progress)
        done = self.done
        while not done:
            done = self.round()
        return self.finish()

    def start(self, workloads: Mapping[str, Workload], progress: Progress = _noop) -> Sampler:
        """Warm up, settle the clocks and calibrate; then sample one round per ``round`` call, so a
        caller can interleave the rounds of two processes (``launchbench ab``). Returns itself."""
        self.workloads, self.progress = workloads, progress
        begin = self.clock.wall()
        for workload in workloads.values():
            self._warm_up(workload)
        warmed = self.clock.wall()
        self.settle_s = self._settle_clocks(next(iter(workloads.values())))
        settled = self.clock.wall()
        self.samples = {m: ModeSamples(iters_per_sample=self._calibrate(w)) for m, w in workloads.items()}
        self.reasons = set()
        self.reading = self.monitor.read() if self.monitor else None
        self.rounds = 0
        self._pending_now = None
        self.spent = self.clock.wall() - begin
        self._prepared = (warmed - begin, settled - warmed, begin + self.spent - settled)
        self._sampling_s = 0.0
        return self

    @property
    def phases(self) -> SamplerPhases:
        """Where the sampling's time went so far."""
        return SamplerPhases(*self._prepared, sampling_s=self._sampling_s)

    def _view(self, mode: str) -> SamplingView:
        samples = self.samples[mode]
        return SamplingView(
            samples.wall, samples.latency, self.spent, self.rounds, mode, samples.cpu, samples.gpu
        )

    def _pending(self) -> list[str]:
        """The modes whose rule is not finished; the answer is kept until the samples change (the next
        round), so a round and the ``done`` after it ask each rule once."""
        if self._pending_now is None:
            self._pending_now = [m for m in self.workloads if not self.rule.finished(self._view(m))]
        return self._pending_now

    @property
    def done(self) -> bool:
        """Every mode's rule finished, or the budget spent (after at least one round)."""
        if not self._pending():
            return True
        return self.budget.finished(SamplingView((), (), self.spent, self.rounds))

    def round(self) -> bool:
        """One round (SAMPLES_PER_ROUND samples of every mode still pending, every mode once when none
        is); whether the sampling is done afterwards."""
        begin = self.clock.wall()
        pending = list(self._pending()) or list(self.workloads)
        self._pending_now = None  # the round's samples change what the rules see
        if self.rounds % 2:
            pending.reverse()
        for mode in pending:
            taken = self._round(self.workloads[mode], self.samples[mode])
            if self.monitor:
                self._read_clocks(self.samples[mode], taken)
        self.rounds += 1
        took = self.clock.wall() - begin
        self.spent += took
        self._sampling_s += took
        self.progress(min(1.0, self.spent / self.settings.max_time))
        return self.done

    def _read_clocks(self, samples: ModeSamples, taken: int) -> None:
        """The SM clock after a mode's round, and its samples counted as throttled where it was."""
        assert self.monitor is not None
        self.reading = self.monitor.read()
        if self.reading.sm_mhz is not None:
            samples.sm_mhz.append(self.reading.sm_mhz)
        if self.reading.throttled:
            samples.throttled += taken
            samples.throttle_reasons.update(self.reading.throttle_reasons)
            self.reasons.update(self.reading.throttle_reasons)

    def finish(self) -> SamplingOutcome:
        budget_hit = bool(self._pending()) and self.rounds > 0  # the budget ended sampling
        for mode, mode_samples in self.samples.items():
            mode_samples.target_met = self.target.finished(self._view(mode))
        self.progress(1.0)
        return SamplingOutcome(
            self.samples, budget_hit, self.settle_s, self.reading, tuple(sorted(self.reasons))
        )

    def _warm_up(self, workload: Workload) -> None:
        """Run the workload until what warming up is for is done: the first launch (JIT compilation,
        a graph's upload, first-touch allocations) and WARMUP_BATCHES more batches after it, the last
        lasting a whole sample (sample_time), so caches and the launch path are warm; at most
        warmup_time, at least one batch. The clocks are settled after it (``_settle_clocks``)."""
        begin = self.clock.wall()
        iters, after_first = 1, 0
        while True:
            timing = workload.run_batch(iters)
            if self.clock.wall() - begin >= self.settings.warmup_time:
                return
            long_enough = timing.wall_s >= self.settings.sample_time
            if long_enough and after_first >= WARMUP_BATCHES:
                return
            after_first += 1
            if not long_enough:
                iters = min(iters * 2, MAX_ITERS_PER_SAMPLE)

    def _settle_clocks(self, workload: Workload) -> float:
        """Keep the GPU busy until two SM clock readings agree within 2% (at most MAX_SETTLE_TIME)."""
        if self.monitor is None:
            return 0.0
        begin = self.clock.wall()
        iters = self._calibrate(workload)
        previous = self.monitor.read().sm_mhz
        while self.clock.wall() - begin < MAX_SETTLE_TIME:
            workload.run_batch(iters)
            current = self.monitor.read().sm_mhz
            if previous is None or current is None:
                break
            if abs(current - previous) <= SETTLE_TOLERANCE * max(current, previous):
                break
            previous = current
        return self.clock.wall() - begin

    def _calibrate(self, workload: Workload) -> int:
        """Iterations per throughput sample so that one sample lasts at least sample_time, a whole multiple
        of the workload's ``iters_multiple`` where it has one (a shape-changing mode: iterations per shape,
        so that every sample holds the same number of shape changes)."""
        multiple = max(1, int(getattr(workload, "iters_multiple", 1)))
        iters = multiple
        for _ in range(40):
            timing = workload.run_batch(iters)
            if timing.wall_s >= self.settings.sample_time or iters >= MAX_ITERS_PER_SAMPLE:
                break
            per_iter = timing.wall_s / iters
            wanted = self.settings.sample_time / per_iter if per_iter > 0 else iters * 10
            iters = min(MAX_ITERS_PER_SAMPLE, max(iters * 2, math.ceil(wanted * 1.1)))
            iters = max(multiple, iters // multiple * multiple)
        return iters

    def _round(self, workload: Workload, samples: ModeSamples) -> int:
        n = samples.iters_per_sample
        for _ in range(SAMPLES_PER_ROUND):
            timing = workload.run_batch(n)
            samples.wall.append(timing.wall_s / n)
            samples.cpu.append(timing.cpu_s / n)
            if timing.gpu_s is not None:
                samples.gpu.append(timing.gpu_s / n)
            samples.latency.append(workload.run_latency())
        return SAMPLES_PER_ROUND
