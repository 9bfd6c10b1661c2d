"""The table a serving engineer asks of a sweep over batch size: per size and graph mode, eager against
the graph per step, what the graph costs to capture and to keep, the cumulative cost of capturing every
size up to that one (one graph per size, each with its own memory), and the break-even in steps.

It reads results.csv's table (analysis.table.run_table): a step is one chain iteration
(wall_us_per_iter), a graph's setup is capture + instantiate + upload (setup_us), its memory is
graph_mem_bytes (the driver's free-memory drop) beside graph_pool_bytes (its pool). Numbers stay in the
units of results.csv's columns; ``markdown`` formats them for people.
"""

from __future__ import annotations

import json
import math

import pandas as pd

from launchbench.errors import LaunchbenchError
from launchbench.results.schema import MEASURED_STATUSES

GRAPH_MODES: tuple[str, ...] = ("graph", "torch_graph")
GROUP_KEYS = ["scenario", "chain", "others", "mode"]
# the table's columns: name → meaning (docs/torch.md lists them)
TABLE_COLUMNS: dict[str, str] = {
    "scenario": "scenario name",
    "chain": "chain name",
    "others": "the case's other sweep values (JSON), without the size axis",
    "mode": "graph mode: graph (CuPy's stream capture) or torch_graph (torch.cuda.CUDAGraph)",
    "size": "the size axis' value (batch size)",
    "status": "the graph mode's status (ok, budget, not_capturable, failed)",
    "reason": "why the graph mode is not ok",
    "eager_us_per_step": "eager wall µs per chain iteration (one step)",
    "graph_us_per_step": "graph replay wall µs per step",
    "speedup": "eager / graph per step",
    "saving_us_per_step": "eager − graph µs per step",
    "capture_us": "capture µs (with instantiation where not split)",
    "instantiate_us": "instantiation µs (empty where not split from capture)",
    "setup_us": "capture + instantiate + upload µs",
    "mem_bytes": "device memory the graph takes (driver free-memory drop)",
    "pool_bytes": "device memory its pool holds",
    "captured": "sizes up to this one whose graph was captured",
    "cumulative_setup_s": "seconds to capture every size up to this one (captured sizes)",
    "cumulative_mem_bytes": "memory of every graph up to this one, each with its own pool",
    "cumulative_pool_bytes": "pool memory of every graph up to this one",
    "break_even_steps": "steps for the graph's setup to pay back (setup / saving); empty where eager is as fast",
}


def _size(params: str, axis: str) -> float | None:
    values = json.loads(params) if isinstance(params, str) and params else {}
    value = values.get(axis)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _others(params: str, axis: str) -> str:
    values = json.loads(params) if isinstance(params, str) and params else {}
    return json.dumps({k: v for k, v in values.items() if k != axis}, sort_keys=True)


def _per_size(table: pd.DataFrame, axis: str) -> pd.DataFrame:
    """The table's rows with the size and the other sweep values apart; LaunchbenchError without the axis."""
    sizes = table["params"].map(lambda p: _size(p, axis))
    if sizes.isna().all():
        known = sorted({k for p in table["params"] if isinstance(p, str) and p for k in json.loads(p)})
        raise LaunchbenchError(
            f"no case was swept over '{axis}' (sweep axes in the run: {', '.join(known) or 'none'}); "
            f"name the size axis with --axis"
        )
    rows = table.assign(size=sizes, others=table["params"].map(lambda p: _others(p, axis)))
    return rows[rows["size"].notna()]


def capture_table(table: pd.DataFrame, axis: str = "batch") -> pd.DataFrame:
    """One row per scenario, chain, other sweep values, graph mode and size (ascending), with the
    columns of TABLE_COLUMNS; the cumulative columns sum the sizes up to each row's."""
    rows = _per_size(table, axis)
    eager = rows[rows["mode"] == "eager"].set_index(["scenario", "chain", "others", "size"])
    graphs = rows[rows["mode"].isin(GRAPH_MODES)].copy()
    key = pd.MultiIndex.from_frame(graphs[["scenario", "chain", "others", "size"]])
    graphs["eager_us_per_step"] = eager["wall_us_per_iter"].reindex(key).to_numpy()
    measured = graphs["status"].isin(MEASURED_STATUSES)
    graphs["graph_us_per_step"] = graphs["wall_us_per_iter"].where(measured)
    graphs["speedup"] = graphs["eager_us_per_step"] / graphs["graph_us_per_step"]
    graphs["saving_us_per_step"] = graphs["eager_us_per_step"] - graphs["graph_us_per_step"]
    graphs = graphs.rename(columns={"graph_mem_bytes": "mem_bytes", "graph_pool_bytes": "pool_bytes"})
    for column in ("setup_us", "capture_us", "instantiate_us", "mem_bytes", "pool_bytes"):
        graphs[column] = pd.to_numeric(graphs[column], errors="coerce").where(measured)
    saving = graphs["saving_us_per_step"]
    graphs["break_even_steps"] = (graphs["setup_us"] / saving).where(saving > 0)
    graphs = graphs.sort_values([*GROUP_KEYS, "size"], kind="stable")
    grouped = graphs.groupby(GROUP_KEYS, sort=False)
    graphs["captured"] = grouped["setup_us"].transform(lambda s: s.notna().cumsum())
    graphs["cumulative_setup_s"] = grouped["setup_us"].transform(lambda s: s.fillna(0).cumsum()) * 1e-6
    graphs["cumulative_mem_bytes"] = grouped["mem_bytes"].transform(lambda s: s.fillna(0).cumsum())
    graphs["cumulative_pool_bytes"] = grouped["pool_bytes"].transform(lambda s: s.fillna(0).cumsum())
    graphs["reason"] = graphs["reason"].fillna("")
    return graphs[list(TABLE_COLUMNS)].reset_index(drop=True)


def _cell(value: object, scale: float = 1.0, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    number = float(value) * scale  # type: ignore[arg-type]
    return f"{number:.{digits}g}" if abs(number) < 10**digits else f"{number:,.0f}"


MIB = 1 / 2**20
MARKDOWN_COLUMNS: tuple[tuple[str, str, float], ...] = (
    ("eager µs/step", "eager_us_per_step", 1.0),
    ("graph µs/step", "graph_us_per_step", 1.0),
    ("speedup", "speedup", 1.0),
    ("capture ms", "setup_us", 1e-3),
    ("memory MiB", "mem_bytes", MIB),
    ("pool MiB", "pool_bytes", MIB),
    ("all sizes up to here: capture s", "cumulative_setup_s", 1.0),
    ("memory MiB", "cumulative_mem_bytes", MIB),
    ("break-even steps", "break_even_steps", 1.0),
)


def markdown(rows: pd.DataFrame, axis: str = "batch") -> str:
    """The table in Markdown, one section per chain and graph mode (capture ms: capture + instantiate +
    upload); a graph mode that was not measured shows its status and reason."""
    out: list[str] = []
    for (scenario, chain, others, mode), group in rows.groupby(GROUP_KEYS, sort=False):
        extra = "" if others == "{}" else f" {others}"
        out.append(f"### {scenario}: {chain}{extra}, {mode}\n")
        out.append("| " + " | ".join([axis, *(c[0] for c in MARKDOWN_COLUMNS)]) + " |")
        out.append("|" + "---:|" * (len(MARKDOWN_COLUMNS) + 1))
        for _, row in group.iterrows():
            cells = [_cell(row["size"])]
            if row["status"] in MEASURED_STATUSES:
                cells += [_cell(row[column], scale) for _, column, scale in MARKDOWN_COLUMNS]
            else:
                cells += [f"{row['status']}: {row['reason']}"[:120]] + ["—"] * (len(MARKDOWN_COLUMNS) - 1)
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)
