"""History queries as records, and those records as a rich table, CSV (the standard library's writer) or
JSON. Loads only what the format needs: ``history trend --format csv`` is a short process."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from launchbench.history.columns import ENV_COLUMNS
from launchbench.printable import visible

if TYPE_CHECKING:  # loaded by the command that asked for them (changes: ruptures and scipy)
    from launchbench.history.changes import ChangePoint
    from launchbench.history.matching import RunInfo
    from launchbench.history.trend import TrendPoint

FORMATS = ("table", "markdown", "csv", "json")
HistoryKind = Literal["list", "trend", "changes"]


def run_records(runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": r.id,
            "name": r.name,
            "started": r.started.isoformat(),
            "status": r.status,
            "scenarios": r.scenarios,
            **r.env,
            "ab_id": r.ab_id,
            "ab_side": r.ab_side,
            "run_dir": r.run_dir,
        }
        for r in runs
    ]


def trend_records(points: Sequence[TrendPoint], metric: str) -> list[dict[str, Any]]:
    return [
        {
            "run_id": p.run.id,
            "name": p.run.name,
            "started": p.run.started.isoformat(),
            "metric": metric,
            "median": p.median,
            "ci_low": p.ci_low,
            "ci_high": p.ci_high,
            "passes": p.passes,
            "n": p.n,
            "host_bound": p.host_bound,
            "sm_mhz": p.sm_mhz,
            "load_1m": p.load_1m,
            "gpu_name": p.run.env["gpu_name"],
            "driver": p.run.env["driver"],
            "cupy": p.run.env["cupy"],
            "git_commit": p.run.env["git_commit"],
            "run_dir": p.run.run_dir,
        }
        for p in points
    ]


def change_records(changes: Sequence[ChangePoint]) -> list[dict[str, Any]]:
    return [
        {
            "scenario": c.scenario,
            "case": c.case,
            "mode": c.mode,
            "metric": c.metric,
            "run_before": c.before.name,
            "run_after": c.after.name,
            "started_after": c.after.started.isoformat(),
            "runs_before": c.runs_before,
            "runs_after": c.runs_after,
            "value_before": c.value_before,
            "value_after": c.value_after,
            "step_pct": 100 * c.step,
            "step_ci_low_pct": 100 * c.step_ci_low,
            "step_ci_high_pct": 100 * c.step_ci_high,
            "p_value": c.p_value,
            "host_bound": c.host_bound,
            "environment_changes": c.explanation,
            "run_dir_before": c.before.run_dir,
            "run_dir_after": c.after.run_dir,
        }
        for c in changes
    ]


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _csv_value(value: Any) -> Any:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _csv(records: list[dict[str, Any]]) -> str:
    """Records as CSV: a header of every key, an empty cell for None and nan."""
    if not records:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _csv_value(v) for k, v in r.items()} for r in records)
    return buffer.getvalue()


def history_json(records: list[dict[str, Any]], kind: HistoryKind, title: str) -> str:
    """Records as the versioned JSON document of ``kind`` (launchbench.report.documents)."""
    from launchbench.report.documents import (
        HistoryChange,
        HistoryChangesDocument,
        HistoryRun,
        HistoryRunsDocument,
        HistoryTrendDocument,
        HistoryTrendPoint,
        to_json,
    )

    clean = [{k: _json_value(v) for k, v in r.items()} for r in records]
    if kind == "list":
        return to_json(HistoryRunsDocument(title=title, runs=[HistoryRun.model_validate(r) for r in clean]))
    if kind == "trend":
        points = [HistoryTrendPoint.model_validate(r) for r in clean]
        return to_json(HistoryTrendDocument(title=title, points=points))
    changes = [HistoryChange.model_validate(r) for r in clean]
    return to_json(HistoryChangesDocument(title=title, changes=changes))


def render(
    records: list[dict[str, Any]],
    fmt: str,
    title: str,
    columns: Sequence[str] | None = None,
    kind: HistoryKind = "list",
    width: int | None = None,
) -> str:
    """Records as text in one of FORMATS. ``columns`` limits the table format (CSV and JSON keep all);
    ``kind`` names the JSON document; ``width`` is the terminal's (None: as wide as the widest line, for
    pipes and files, so no cell is cut)."""
    if fmt == "json":
        return history_json(records, kind, title)
    if fmt == "csv":
        return _csv(records)
    if fmt == "markdown":
        return _markdown(records, list(columns or (records[0].keys() if records else [])), title)
    shown = list(columns or (records[0].keys() if records else []))
    while True:  # the least needed columns go until the table fits the width with no cell cut
        text = _table_text(records, shown, title, width)
        droppable = [name for name in DROP_FIRST if name in shown]
        if width is None or (_fits(text, width) and _needed(records, shown) <= width) or not droppable:
            return text
        shown.remove(droppable[0])


def _markdown(records: list[dict[str, Any]], shown: list[str], title: str) -> str:
    """The table's columns as a markdown table under the title."""
    headers = [HEADERS.get(name, name.replace("_", " ")) for name in shown]
    lines = [f"**{visible(title)}**", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(shown)]
    for record in records:
        cells = (visible(_cell(record.get(name))).replace("|", "\\|") for name in shown)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _fits(text: str, width: int) -> bool:
    """No cell cut short (rich marks one with an ellipsis) and no line beyond the width (rich crops it)."""
    return "…" not in text and all(len(line.rstrip()) <= width for line in text.splitlines())


def _needed(records: list[dict[str, Any]], shown: Sequence[str]) -> int:
    """Columns the table needs with every unfolded cell whole: each column's widest cell or header (a
    folded one its minimum), plus a border and two spaces of padding per column."""
    from rich.cells import cell_len

    total = 1
    for name in shown:
        header = HEADERS.get(name, name.replace("_", " "))
        cells = [cell_len(visible(_cell(r.get(name)))) for r in records]
        total += 3 + (FOLD_WIDTH if name in FOLDED else max([cell_len(header), *cells]))
    return total


def _table_text(records: list[dict[str, Any]], shown: Sequence[str], title: str, width: int | None) -> str:
    from rich.table import Table

    from launchbench.report.terminal import literal, plain_console

    table = Table(title=literal(visible(title)), title_justify="left")
    for name in shown:
        header = HEADERS.get(name, name.replace("_", " "))
        if name in FOLDED:
            table.add_column(header, overflow="fold", min_width=FOLD_WIDTH)
        else:
            numeric = any(isinstance(r.get(name), int | float) for r in records)
            table.add_column(header, justify="right" if numeric else "left", no_wrap=True)
    for record in records:
        table.add_row(*(literal(visible(_cell(record.get(name)))) for name in shown))
    buffer = io.StringIO()
    console = plain_console(buffer)
    if width is not None:
        console.width = width
    console.print(table)
    return buffer.getvalue()


# text that may wrap over lines (everything else is kept whole: names, ids, numbers)
FOLDED = frozenset({"environment_changes", "scenarios"})
FOLD_WIDTH = 12
# what a narrow terminal loses first (CSV and JSON keep every column)
DROP_FIRST: tuple[str, ...] = (
    "ab_id", "ab_side", "git_branch", "host", "load_1m", "sm_mhz", "cupy", "driver", "git_commit",
    "started", "passes", "scenarios", "step_ci_low_pct", "step_ci_high_pct", "p_value", "run_before",
    "metric", "ci_low", "ci_high", "name",
)  # fmt: skip


# table headers with their units (CSV and JSON keep the keys)
HEADERS: dict[str, str] = {
    "run_id": "run",
    "ci_low": "CI low",
    "ci_high": "CI high",
    "sm_mhz": "SM MHz",
    "load_1m": "load 1 min",
    "git_commit": "commit",
    "git_branch": "branch",
    "gpu_name": "GPU",
    "ab_id": "ab id",
    "ab_side": "ab side",
    "run_before": "before",
    "run_after": "after",
    "step_pct": "step %",
    "step_ci_low_pct": "CI low %",
    "step_ci_high_pct": "CI high %",
    "p_value": "p",
    "environment_changes": "what changed",
    "value_before": "before",
    "value_after": "after",
}


LIST_COLUMNS = (
    "run_id",
    "name",
    "started",
    "scenarios",
    *ENV_COLUMNS[:1],
    "driver",
    "cupy",
    "git_commit",
    "git_branch",
    "host",
    "ab_id",
    "ab_side",
)
TREND_COLUMNS = (
    "run_id",
    "name",
    "started",
    "median",
    "ci_low",
    "ci_high",
    "passes",
    "sm_mhz",
    "load_1m",
    "driver",
    "cupy",
    "git_commit",
)
CHANGE_COLUMNS = (
    "scenario",
    "case",
    "mode",
    "metric",
    "run_before",
    "run_after",
    "step_pct",
    "step_ci_low_pct",
    "step_ci_high_pct",
    "p_value",
    "environment_changes",
)
