"""Which change-point method for `history changes`: an evaluation on synthetic series built from the
committed H200 quickstart runs' raw passes (as tests/history/synth.py builds them, here in memory).

Each series has 12 runs alternating the two back-to-back runs (results/quickstart-h200, -b); host-bound
rows (every eager row, the one-launch empty graph) get a per-run host factor (log-normal, sd 12%: the
drift seen between H200 runs); in the stepped series every graph row is 8% slower from run 7 on. For
each method and 20 seeds: how many GPU-bound graph rows get a change at run 7 (of 7 per series), and
how many changes are reported anywhere else (eager rows, wrong runs, the A/A series).

    python benchmarks/history_changepoints.py            # ruptures variants and launchbench's method
    PYTHONPATH=/path/to/signal-processing-algorithms python benchmarks/history_changepoints.py  # + E-divisive

E-divisive is MongoDB's implementation (package signal-processing-algorithms, used by Apache Otava);
it is evaluated when importable and is not a dependency of launchbench.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import ruptures as rpt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from launchbench.analysis.drift import is_host_bound  # noqa: E402
from launchbench.analysis.stats import pass_medians  # noqa: E402
from launchbench.history.changes import candidates, noise, row_changes  # noqa: E402
from launchbench.history.matching import RunInfo  # noqa: E402
from launchbench.history.query import RowSeries  # noqa: E402
from launchbench.history.tables import ENV_COLUMNS  # noqa: E402
from launchbench.results.store import load_run  # noqa: E402

RUNS, STEP_AT, STEP, DRIFT_SD, SEEDS = 12, 7, 1.08, 0.12, 20
METRIC = "wall_us_per_launch"


def base_rows() -> list[dict[tuple[str, str], tuple[list[float], bool]]]:
    """Per committed run: row → (pass medians of the metric, host-bound)."""
    out = []
    for name in ("quickstart-h200", "quickstart-h200-b"):
        run = load_run(REPO / "results" / name)
        rows = {}
        for case in run.cases:
            for mode in case.modes:
                values = case.metric_samples(mode, METRIC)
                rows[(case.case_id, mode)] = (
                    pass_medians(values, case.modes[mode].pass_sizes),
                    is_host_bound(case, mode),
                )
        out.append(rows)
    return out


def make_series(bases, seed: int, step: float) -> dict[tuple[str, str], list[list[float]]]:
    rng = np.random.default_rng(seed)
    series: dict[tuple[str, str], list[list[float]]] = {key: [] for key in bases[0]}
    for i in range(1, RUNS + 1):
        base = bases[(i - 1) % 2]
        drift = float(np.exp(rng.normal(0, DRIFT_SD)))
        for key, (medians, host) in base.items():
            factor = (drift if host else 1.0) * (step if key[1] == "graph" and i >= STEP_AT else 1.0)
            series[key].append([m * factor for m in medians])
    return series


def launchbench_method(passes: list[list[float]]) -> list[int]:
    runs = tuple(
        RunInfo(
            i,
            f"run-{i + 1:02d}",
            "",
            "complete",
            datetime.now(timezone.utc),
            "",
            dict.fromkeys(ENV_COLUMNS),
        )
        for i in range(len(passes))
    )
    series = RowSeries(
        ("quickstart", "x", "graph"),
        runs,
        (1,) * len(passes),
        (False,) * len(passes),
        tuple({"wall": tuple(p)} for p in passes),
    )
    return [c.index for c in row_changes(series, METRIC)]


def run_values(passes: list[list[float]]) -> np.ndarray:
    return np.array([np.mean(np.log(p)) for p in passes])


def pelt_runs(passes: list[list[float]]) -> list[int]:
    return candidates(run_values(passes))


def pelt_passes(passes: list[list[float]]) -> list[int]:
    flat = np.log(np.concatenate(passes))
    run_of = np.repeat(np.arange(len(passes)), [len(p) for p in passes])
    ends = (
        rpt.Pelt(model="l2", min_size=2, jump=1)
        .fit((flat / noise(flat)).reshape(-1, 1))
        .predict(pen=2 * math.log(len(flat)))
    )
    return sorted({int(run_of[e]) for e in ends if e < len(flat)})


def kernel_rbf(passes: list[list[float]]) -> list[int]:
    values = run_values(passes)
    ends = (
        rpt.KernelCPD(kernel="rbf", min_size=2)
        .fit(values.reshape(-1, 1))
        .predict(pen=2 * math.log(len(values)))
    )
    return [e for e in ends if e < len(values)]


def e_divisive_runs(passes: list[list[float]]) -> list[int]:
    from signal_processing_algorithms.energy_statistics.energy_statistics import e_divisive

    return sorted(e_divisive(run_values(passes), pvalue=0.05, permutations=100))


def main() -> None:
    methods: dict[str, Callable[[list[list[float]]], list[int]]] = {
        "launchbench: PELT (l2, BIC) on run values, confirmed (Welch CI, permutation test; runs as units)": launchbench_method,
        "PELT (l2, BIC) on run values, unconfirmed": pelt_runs,
        "PELT (l2, BIC) on pass medians, unconfirmed": pelt_passes,
        "KernelCPD (rbf, BIC) on run values": kernel_rbf,
    }
    try:
        import signal_processing_algorithms  # noqa: F401

        methods["E-divisive (signal-processing-algorithms, p=0.05) on run values"] = e_divisive_runs
    except ImportError:
        print("(signal-processing-algorithms not importable: E-divisive left out)")
    bases = base_rows()
    gpu_graph = [k for k, (_, host) in bases[0].items() if k[1] == "graph" and not host]
    print(
        f"{SEEDS} seeds x 12 runs; step +{100 * (STEP - 1):.0f}% on graph rows at run {STEP_AT}; host drift sd {100 * DRIFT_SD:.0f}%;"
        f" metric {METRIC}; {len(gpu_graph)} GPU-bound graph rows per series\n"
    )
    print(
        "| method | GPU-bound graph rows with the step at run 7 | other changes, stepped series | changes, A/A series |"
    )
    print("| --- | ---: | ---: | ---: |")
    for name, method in methods.items():
        found = other = aa = 0
        for seed in range(1, SEEDS + 1):
            stepped, flat = make_series(bases, seed, STEP), make_series(bases, seed, 1.0)
            for key, passes in stepped.items():
                cps = method(passes)
                hit = (STEP_AT - 1) in cps and key in gpu_graph
                found += hit
                other += len(cps) - (1 if (STEP_AT - 1) in cps and key[1] == "graph" else 0)
            aa += sum(len(method(p)) for p in flat.values())
        total = SEEDS * len(gpu_graph)
        print(f"| {name} | {found}/{total} | {other} | {aa} |")


if __name__ == "__main__":
    main()
