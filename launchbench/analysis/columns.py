"""Every results.csv column with its unit and meaning: the id, graph and check columns from columns.csv,
each timing metric followed by its spread columns, and the host-level columns of LEVEL_METRICS. Light to import (no pandas or SciPy): `validate` and
the expectation checks read it; docs/columns.md is generated from COLUMNS (scripts/docs.py)."""

from __future__ import annotations

import csv
import io
from importlib import resources

from launchbench.results.schema import METRICS, SPREAD_SUFFIXES


# Column name → (unit, meaning), from columns.csv (id, graph and check columns, each group in order).
# Timing metrics are followed by their spread columns (SPREAD_SUFFIXES).
def _column_groups() -> dict[str, dict[str, tuple[str, str]]]:
    groups: dict[str, dict[str, tuple[str, str]]] = {}
    text = resources.files("launchbench.analysis").joinpath("columns.csv").read_text(encoding="utf-8")
    for row in csv.DictReader(io.StringIO(text)):
        groups.setdefault(row["group"], {})[row["column"]] = (row["unit"], row["meaning"])
    return groups


_GROUPS = _column_groups()
ID_COLUMNS: dict[str, tuple[str, str]] = _GROUPS["id"]
GRAPH_COLUMNS: dict[str, tuple[str, str]] = _GROUPS["graph"]
CHECK_COLUMNS: dict[str, tuple[str, str]] = _GROUPS["check"]
SHAPE_COLUMNS: dict[str, tuple[str, str]] = _GROUPS["shape"]
FLEET_COLUMNS: dict[str, tuple[str, str]] = _GROUPS["fleet"]


def metric_columns() -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for metric in METRICS:
        out[metric.name] = ("µs", f"median {metric.doc}")
        for suffix, meaning in SPREAD_SUFFIXES.items():
            unit = "—" if suffix in ("n", "outliers", "rel_ci", "rel_noise") else "µs"
            out[f"{metric.name}_{suffix}"] = (unit, meaning)
    return out


# The metrics whose host levels results.csv reports (analysis.host_levels), each with LEVEL_SUFFIXES.
LEVEL_METRICS: tuple[str, ...] = ("wall_us_per_launch", "cpu_us_per_launch", "latency_us")
LEVEL_SUFFIXES: dict[str, tuple[str, str]] = {
    "levels": ("levels", "host levels among the pass medians: 1 or 2 (docs/statistics.md, Host levels)"),
    "level_low": ("µs", "the lower level: the median of its passes' medians (empty with one level)"),
    "level_low_share": ("—", "share of the passes at the lower level"),
    "level_high": ("µs", "the higher level: the median of its passes' medians (empty with one level)"),
    "level_high_share": ("—", "share of the passes at the higher level"),
    "passes_apart": (
        "passes",
        "passes that sit apart from the one level without forming a level of their own",
    ),
}


def level_columns() -> dict[str, tuple[str, str]]:
    """Each level metric's LEVEL_SUFFIXES, then the levels group of columns.csv."""
    per_metric = {
        f"{metric}_{suffix}": (unit, f"{metric}: {meaning}")
        for metric in LEVEL_METRICS
        for suffix, (unit, meaning) in LEVEL_SUFFIXES.items()
    }
    return {**per_metric, **_GROUPS["levels"]}


COLUMNS: dict[str, tuple[str, str]] = {
    **ID_COLUMNS,
    **metric_columns(),
    **GRAPH_COLUMNS,
    **CHECK_COLUMNS,
    **SHAPE_COLUMNS,
    **level_columns(),
    **FLEET_COLUMNS,
}
