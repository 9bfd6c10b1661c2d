"""Measurement settings given on the command line (run, ab): the values given and the quick preset, each
held to the scenario file's rules (scenario.core.MeasureSettings) before anything is planned. The
defaults are MeasureSettings'; the command line's help reads them from here."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Overrides
from launchbench.scenario.core import MeasureSettings, measure_overrides_error

QUICK: Mapping[str, float | int] = MappingProxyType(
    {
        "target_noise": 0.03,
        "latency_target_noise": 0.05,
        "max_time": 1.0,
        "min_samples": 5,
        "warmup_time": 0.05,
        "passes": 2,
    }
)
AB_ROUNDS = 10  # ab's default rounds: the interval over rounds narrows with their number, its t quantile with their df


class Preset(enum.Enum):
    """Where the settings not given start from: the scenario files' own, or the quick preset."""

    FILE = "file"
    QUICK = "quick"


class OverridesError(LaunchbenchError):
    """A command-line value the scenario file would refuse (nan, inf, out of range); names the option."""


def default(name: str) -> Any:
    """A measurement setting's default (MeasureSettings'), for help texts."""
    return MeasureSettings.model_fields[name].default


def measure_overrides(given: Mapping[str, float | int | None], preset: Preset = Preset.FILE) -> Overrides:
    """The preset's settings with the given values (None: not given) over them, each value held to the
    file's rules alone (the file's max_samples is checked per file, when planned)."""
    out: dict[str, Any] = dict(QUICK) if preset is Preset.QUICK else {}
    out.update({key: value for key, value in given.items() if value is not None})
    try:
        MeasureSettings.model_validate({"max_samples": 10_000_000, **out})
    except ValidationError as err:
        raise OverridesError(measure_overrides_error(err)) from None
    return Overrides.model_validate(out)


def ab_overrides(
    given: Mapping[str, float | int | None], rounds: int | None, preset: Preset = Preset.FILE
) -> Overrides:
    """ab's settings: as measure_overrides, the passes being its rounds (AB_ROUNDS unless given; the
    quick preset's own without --passes)."""
    out = measure_overrides(given, preset)
    if rounds is not None or preset is not Preset.QUICK:
        return out.model_copy(update={"passes": rounds or AB_ROUNDS})
    return out


def quick_help(rounds: str = "passes") -> str:
    """The --quick option's help, read from QUICK."""
    return (
        f"Preset: {QUICK['target_noise']:.0%} target, {QUICK['max_time']:g} s per case in "
        f"{QUICK['passes']} {rounds}, {QUICK['min_samples']} samples minimum."
    )
