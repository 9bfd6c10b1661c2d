"""When to stop sampling: stopping rules behind one small protocol, as nvbench's stopping criteria
(``stdrel``, ``entropy``) are. A rule looks at one mode's samples so far and the sampling's time spent
(``SamplingView``) and says whether that mode is finished.

The named rules:

- ``NoiseTarget``: the median's 95% CI half-width is within the noise target, for the throughput
  samples (wall) and the latency samples (each with its own target), after a minimum number of samples.
- ``SampleCap``: the sample cap is reached.
- ``TimeBudget``: the case's time budget is spent, after at least one round.
- ``Plateau``: the relative CI width has stopped narrowing over the last ``k`` batches (rounds).
- ``SpreadShare``: the mode's within-pass CI half-width is a small share of the spread its row's
  earlier passes showed between them (the quantity a multi-pass row's CI is made of).
- ``FirstOf``: finished as soon as one of its rules is.

The sampler (sampler.py) samples a mode while its mode rule (by default ``FirstOf(NoiseTarget,
SampleCap)``: ``default_rule``; with the earlier passes' spread, ``spread_rule``) says it is not finished, ends the case when every mode is finished or
its ``TimeBudget`` is spent, and records for each mode whether its ``NoiseTarget`` was met.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np

from launchbench.measure.precision import median_ci, relative_half_width
from launchbench.scenario.core import MeasureSettings


@dataclass(frozen=True)
class SamplingView:
    """What a stopping rule sees of one mode: its throughput (wall) and latency samples so far, the
    seconds the sampling has spent, the rounds it has taken, the mode's name and its CPU- and GPU-time
    samples."""

    wall: Sequence[float]
    latency: Sequence[float] = ()
    spent: float = 0.0
    rounds: int = 0
    mode: str = ""
    cpu: Sequence[float] = ()
    gpu: Sequence[float] = ()


class StoppingRule(Protocol):
    name: ClassVar[str]

    def finished(self, view: SamplingView) -> bool:
        """Whether sampling of this mode may stop."""
        ...


def relative_width(samples: Sequence[float]) -> float:
    """The median's 95% CI half-width relative to the median."""
    return relative_half_width(float(np.median(samples)), *median_ci(samples))


@dataclass(frozen=True)
class StopRule:
    """One series' noise target: precise once the median's CI half-width is within ``target_noise`` of
    the median, after ``min_samples``; ``full`` at ``max_samples``."""

    target_noise: float
    min_samples: int
    max_samples: int

    def precise_enough(self, samples: Sequence[float]) -> bool:
        """True once the median's CI half-width is within target_noise of the median."""
        if len(samples) < self.min_samples:
            return False
        return relative_width(samples) <= self.target_noise

    def full(self, samples: Sequence[float]) -> bool:
        return len(samples) >= self.max_samples


@dataclass(frozen=True)
class NoiseTarget:
    """Both series precise enough: the throughput samples within ``wall``'s target, the latency
    samples within ``latency``'s."""

    name: ClassVar[str] = "noise"
    wall: StopRule
    latency: StopRule

    @classmethod
    def of(cls, settings: MeasureSettings) -> NoiseTarget:
        bounds = (settings.min_samples, settings.max_samples)
        return cls(StopRule(settings.target_noise, *bounds), StopRule(settings.latency_target_noise, *bounds))

    def finished(self, view: SamplingView) -> bool:
        return self.wall.precise_enough(view.wall) and self.latency.precise_enough(view.latency)


@dataclass(frozen=True)
class SampleCap:
    name: ClassVar[str] = "samples"
    max_samples: int

    def finished(self, view: SamplingView) -> bool:
        return len(view.wall) >= self.max_samples


@dataclass(frozen=True)
class TimeBudget:
    """The time budget spent (seconds inside the sampling's own calls), after at least one round."""

    name: ClassVar[str] = "budget"
    max_time: float

    def finished(self, view: SamplingView) -> bool:
        return view.rounds > 0 and view.spent >= self.max_time


@dataclass(frozen=True)
class Plateau:
    """The relative CI width of both series has stopped narrowing: over the last ``batches`` batches
    of ``batch`` samples each it shrank by less than ``tolerance`` (a fraction of the width then), after
    ``min_samples``. A series too short to look back that far has not plateaued."""

    name: ClassVar[str] = "plateau"
    min_samples: int
    batches: int = 3
    batch: int = 5
    tolerance: float = 0.05

    def _flat(self, samples: Sequence[float]) -> bool:
        back = len(samples) - self.batches * self.batch
        if len(samples) < self.min_samples or back < max(1, self.min_samples):
            return False
        now, then = relative_width(samples), relative_width(samples[:back])
        return now >= (1 - self.tolerance) * then

    def finished(self, view: SamplingView) -> bool:
        return self._flat(view.wall) and (not view.latency or self._flat(view.latency))


@dataclass(frozen=True)
class FirstOf:
    """Finished as soon as one of ``rules`` is."""

    name: ClassVar[str] = "first_of"
    rules: tuple[StoppingRule, ...]

    def finished(self, view: SamplingView) -> bool:
        return any(rule.finished(view) for rule in self.rules)


SPREAD_SHARE = 0.25  # a pass stops once its CI half-width is within this share of the between-pass spread
MIN_SPREAD_PASSES = 2  # earlier passes needed before their spread is used


@dataclass(frozen=True)
class ModeSpread:
    """How far one mode's earlier passes sat apart: the standard deviation of their log pass medians
    (a relative spread) of each series, the throughput (wall), latency, CPU- and GPU-time samples;
    None where unknown."""

    wall: float | None
    latency: float | None = None
    cpu: float | None = None
    gpu: float | None = None


@dataclass(frozen=True)
class SpreadShare:
    """Every series' within-pass relative CI half-width within ``share`` of its spread between the
    earlier passes, after ``min_samples``. A pass median then varies by at most (share/1.96)² of the
    between-pass variance on its own (1.6% at 0.25), which leaves the row's CI, made of the pass
    medians, as it is. A mode without a known spread never finishes by this rule."""

    name: ClassVar[str] = "spread"
    spreads: Mapping[str, ModeSpread]
    min_samples: int
    share: float = SPREAD_SHARE

    def _within(self, samples: Sequence[float], spread: float | None) -> bool:
        """A series not recorded has nothing to wait for; one without a known spread waits."""
        if not samples:
            return True
        if spread is None:
            return False
        return len(samples) >= self.min_samples and relative_width(samples) <= self.share * spread

    def finished(self, view: SamplingView) -> bool:
        spread = self.spreads.get(view.mode)
        if spread is None or not view.wall:
            return False
        pairs = (
            (view.wall, spread.wall),
            (view.latency, spread.latency),
            (view.cpu, spread.cpu),
            (view.gpu, spread.gpu),
        )
        return all(self._within(samples, of) for samples, of in pairs)


def default_rule(settings: MeasureSettings) -> FirstOf:
    """When a mode's sampling stops: its noise target met or its sample cap reached."""
    return FirstOf((NoiseTarget.of(settings), SampleCap(settings.max_samples)))


def spread_rule(settings: MeasureSettings, spreads: Mapping[str, ModeSpread]) -> FirstOf:
    """The default rule, or earlier once a mode's CI is small against its earlier passes' spread."""
    return FirstOf((*default_rule(settings).rules, SpreadShare(spreads, settings.min_samples)))


def plateau_rule(settings: MeasureSettings, batch: int) -> FirstOf:
    """The default rule, or earlier once the mode's CI has stopped narrowing (batches of ``batch``)."""
    return FirstOf((*default_rule(settings).rules, Plateau(settings.min_samples, batch=batch)))
