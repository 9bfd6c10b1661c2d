"""The modes a case is measured in, the raw sample series results.json keeps per mode, and the timing
metrics results.csv derives from them.

Plain constants and one frozen dataclass (no numpy, no pydantic), so a command that only names metrics
(``history trend``, its option lists) loads nothing heavier; results.schema re-exports every name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Mode = Literal["eager", "graph", "recapture", "cache", "update", "torch_graph"]
MODES: tuple[Mode, ...] = ("eager", "graph")  # the modes of a chain of fixed sizes
SHAPE_MODES: tuple[Mode, ...] = ("recapture", "cache", "update")  # graph strategies when sizes change
TORCH_MODES: tuple[Mode, ...] = ("torch_graph",)  # a chain that holds torch steps, captured by torch
ALL_MODES: tuple[Mode, ...] = (*MODES, *SHAPE_MODES, *TORCH_MODES)

# Raw sample series kept per mode (seconds).
WALL = "wall_s_per_iter"  # wall time of one chain iteration, launched back to back (throughput)
CPU = "cpu_s_per_iter"  # launching thread's CPU time (thread_time) per iteration
GPU = "gpu_s_per_iter"  # CUDA-event time on the working stream per iteration
LATENCY = "latency_s"  # one iteration launched and synchronized: launch to completion
SAMPLE_KEYS = (WALL, CPU, GPU, LATENCY)
SampleKey = Literal["wall_s_per_iter", "cpu_s_per_iter", "gpu_s_per_iter", "latency_s"]  # one of SAMPLE_KEYS
MEASURED_STATUSES = frozenset({"ok", "budget"})  # a mode with samples: sampled to its target or to its budget


@dataclass(frozen=True)
class Metric:
    """A timing column of results.csv: which raw series it summarises and how it is scaled."""

    name: str
    sample_key: str
    per_launch: bool
    doc: str

    def scale(self, launches_per_iter: int) -> float:
        """Factor from the raw series (seconds per iteration) to this metric's unit (µs, per launch or not)."""
        return 1e6 / launches_per_iter if self.per_launch else 1e6


METRICS: tuple[Metric, ...] = (
    Metric("wall_us_per_launch", WALL, True, "wall time per launch, chain run back to back (throughput)"),
    Metric("wall_us_per_iter", WALL, False, "wall time per chain iteration, run back to back"),
    Metric("cpu_us_per_launch", CPU, True, "launching thread's CPU time per launch"),
    Metric("cpu_us_per_iter", CPU, False, "launching thread's CPU time per chain iteration"),
    Metric("gpu_us_per_iter", GPU, False, "GPU time per iteration, CUDA events on the working stream"),
    Metric("gpu_us_per_launch", GPU, True, "GPU time per launch, CUDA events on the working stream"),
    Metric("latency_us", LATENCY, False, "one iteration launched and synchronized: launch to completion"),
)
METRIC_BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS}

# The columns each timing metric gets in results.csv beside its median, and what each holds.
SPREAD_SUFFIXES: dict[str, str] = {
    "ci_low": "lower bound of the median's 95% confidence interval",
    "ci_high": "upper bound of the median's 95% confidence interval",
    "p5": "5th percentile",
    "p95": "95th percentile",
    "mean": "mean",
    "std": "standard deviation",
    "mad": "median absolute deviation",
    "n": "number of samples",
    "outliers": "samples more than 3 scaled MADs from the median",
    "rel_ci": "half-width of the median's CI over the median (what adaptive sampling targets)",
    "rel_noise": "1.4826·MAD / median (robust relative noise)",
}
