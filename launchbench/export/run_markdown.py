"""A run's headline table as Markdown (for READMEs, pull requests and $GITHUB_STEP_SUMMARY)."""

from __future__ import annotations

import math
from typing import Any

from launchbench.results.schema import RunRecord
from launchbench.results.table import run_table


def _num(value: Any, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.{digits}f}"


def _ci(row: Any, metric: str, digits: int) -> str:
    return f"{_num(row[metric], digits)} [{_num(row[metric + '_ci_low'], digits)}, {_num(row[metric + '_ci_high'], digits)}]"


def run_markdown(run: RunRecord) -> str:
    env = run.environment
    lines = [
        f"**{', '.join(s.name for s in run.scenarios)}** on {run.gpu_name} — driver {env.get('driver')}, CUDA runtime "
        f"{env.get('cuda_runtime')}, CuPy {env.get('cupy')}, launchbench {run.launchbench_version}, {run.started}",
        "",
        "| case | launches | eager µs/launch [95% CI] | graph µs/launch [95% CI] | eager CPU µs/launch | graph CPU µs/launch "
        "| speedup | graph setup µs | break-even iters | graph nodes | outputs match |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    table = run_table(run)
    for (scenario, case), group in table.groupby(["scenario", "case"], sort=False):
        rows = {r["mode"]: r for _, r in group.iterrows()}
        eager, graph = rows.get("eager"), rows.get("graph")
        if eager is None:
            continue
        name = case if len(run.scenarios) == 1 else f"{scenario} {case}"
        graph_ok = graph is not None and graph["status"] in ("ok", "budget")
        match = "—" if graph is None or graph["outputs_match"] is None or graph["outputs_match"] != graph["outputs_match"] else ("✓" if graph["outputs_match"] else "✗")
        lines.append(
            f"| {name} | {eager['launches_per_iter']} | {_ci(eager, 'wall_us_per_launch', 2)} | "
            + (f"{_ci(graph, 'wall_us_per_launch', 3)} | " if graph_ok else f"not captured: {graph['reason'] if graph is not None else ''} | ")
            + f"{_num(eager['cpu_us_per_launch'], 2)} | {_num(graph['cpu_us_per_launch'], 3) if graph_ok else '—'} | "
            + f"{_num(graph['speedup'], 1) + '×' if graph_ok else '—'} | {_num(graph['setup_us'], 0) if graph_ok else '—'} | "
            + f"{_num(graph['break_even_iters'], 1) if graph_ok else '—'} | {_num(graph['graph_nodes'], 0) if graph_ok else '—'} | {match} |"
        )
    return "\n".join(lines) + "\n"
