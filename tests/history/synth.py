"""Synthetic run directories built from the committed H200 quickstart runs' raw passes.

``series`` writes N runs: each a copy of a committed run (alternating the two back-to-back runs a and
b) whose graph rows may step by a factor from a given run on, whose host-bound rows (every eager row,
the one-launch graphs) carry host drift (every pass of a run scaled by one random factor, as a host speed state that lasts a run),
and whose environment may change at a given run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

from launchbench.results.metadata import Environment
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run, write_run

REPO = Path(__file__).resolve().parents[2]
SOURCES = (REPO / "results" / "quickstart-h200", REPO / "results" / "quickstart-h200-b")
START = datetime(2026, 11, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class SeriesSpec:
    runs: int = 12
    graph_step: float = 1.0  # factor applied to graph rows from run `step_at` (1-based) on
    step_at: int = 7
    drift_sd: float = 0.12  # log-normal sd of the per-run host factor on host-bound rows
    env_change: dict[str, str] = field(default_factory=dict)  # environment keys changed from run `step_at` on
    seed: int = 1


STEPPED = SeriesSpec(graph_step=1.08, env_change={"driver": "590.10.01"})


def _scaled(run: RunRecord, factor_for: dict[tuple[str, str], float]) -> RunRecord:
    cases = []
    for case in run.cases:
        modes = {}
        for mode, result in case.modes.items():
            factor = factor_for.get((case.case_id, mode), 1.0)
            if factor != 1.0:
                samples = {k: [v * factor for v in values] for k, values in result.samples.items()}
                result = result.with_samples(samples)
            modes[mode] = result
        cases.append(case.model_copy(update={"modes": modes}))
    return run.model_copy(update={"cases": cases})


def is_host_bound_row(run: RunRecord, case_id: str, mode: str) -> bool:
    from launchbench.analysis.drift import is_host_bound

    case = next(c for c in run.cases if c.case_id == case_id)
    return is_host_bound(case, mode)


def series(out: Path, spec: SeriesSpec = SeriesSpec()) -> list[Path]:
    """Write the series' run directories under ``out`` (run-01 ...); return them in order."""
    rng = np.random.default_rng(spec.seed)
    bases = [load_run(p) for p in SOURCES]
    dirs = []
    for i in range(1, spec.runs + 1):
        base = bases[(i - 1) % 2]
        drift = float(np.exp(rng.normal(0.0, spec.drift_sd)))
        factors: dict[tuple[str, str], float] = {}
        for case in base.cases:
            for mode in case.modes:
                factor = drift if is_host_bound_row(base, case.case_id, mode) else 1.0
                if mode == "graph" and i >= spec.step_at:
                    factor *= spec.graph_step
                factors[(case.case_id, mode)] = factor
        run = _scaled(base, factors)
        env = run.environment.model_dump()
        if i >= spec.step_at:
            env.update(spec.env_change)
        started = (START + timedelta(days=i)).isoformat()
        run = run.model_copy(
            update={"environment": Environment.model_validate(env), "started": started, "finished": started}
        )
        path = out / f"run-{i:02d}"
        path.mkdir(parents=True)
        write_run(path, run)
        dirs.append(path)
    return dirs
