"""A comparison as a long table (one record per row and metric), and a check report (one record per
check): CSV and JSON. The comparison's columns come from report.comparison_table."""

from __future__ import annotations

import csv
import io
import math
from typing import TYPE_CHECKING, Any

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateCheck, GateReport
from launchbench.report import comparison_table
from launchbench.report.documents import (
    CheckDocument,
    CheckRecord,
    ComparisonDocument,
    ComparisonLine,
    ComparisonSettingsRecord,
    ComparisonSide,
    EnvironmentDifference,
    GateRecord,
    to_json,
)

if TYPE_CHECKING:
    import pandas as pd

COMPARISON_COLUMNS: tuple[str, ...] = comparison_table.DATA_KEYS
CHECK_COLUMNS: tuple[str, ...] = (
    "kind",
    "scenario",
    "case",
    "mode",
    "metric",
    "rule",
    "passed",
    "improved",
    "value",
    "message",
)


def _pct(x: float) -> float:
    return x * 100


def comparison_records(comparison: Comparison, report: GateReport | None = None) -> list[dict[str, Any]]:
    """One record per (row, metric), in COMPARISON_COLUMNS order. ``gate`` is fail/pass/'' (no rule)."""
    return comparison_table.records(comparison, report)


def comparison_frame(comparison: Comparison, report: GateReport | None = None) -> pd.DataFrame:
    import pandas as pd  # only for the CSV: the other formats load no pandas

    return pd.DataFrame(comparison_records(comparison, report), columns=list(COMPARISON_COLUMNS))


def comparison_csv(comparison: Comparison, report: GateReport | None = None) -> str:
    """The long table as CSV: the text ``comparison_frame(...).to_csv(index=False)`` writes (a NaN an empty
    cell, the header first, one line per record), by the csv module, which pandas' writer itself is
    built on; compare's CSV then loads no pandas (a twentieth of its start on 2 cores)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COMPARISON_COLUMNS)
    writer.writerows(
        [_csv_cell(record[key]) for key in COMPARISON_COLUMNS]
        for record in comparison_records(comparison, report)
    )
    return out.getvalue()


def _csv_cell(value: Any) -> Any:
    """A value as pandas writes it into a CSV cell: NaN (and None) empty, everything else as ``str`` has it."""
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _clean(value: Any) -> Any:
    """NaN and infinities → null, so the JSON is valid for every parser."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def check_record(check: GateCheck) -> dict[str, Any]:
    """One check, keyed by CHECK_COLUMNS in order."""
    return {
        "kind": check.kind,
        "scenario": check.scenario,
        "case": check.case,
        "mode": check.mode,
        "metric": check.metric,
        "rule": check.rule,
        "passed": check.passed,
        "improved": check.improved,
        "value": check.value,
        "message": check.message,
    }


def gate_record(report: GateReport) -> GateRecord:
    return GateRecord(
        passed=report.passed,
        failures=len(report.failures),
        improvements=len(report.improvements),
        notes=list(report.notes),
        checks=[CheckRecord.model_validate(_clean(check_record(c))) for c in report.checks],
    )


def comparison_document(comparison: Comparison, report: GateReport | None = None) -> ComparisonDocument:
    s = comparison.settings
    return ComparisonDocument(
        baseline=ComparisonSide(source=comparison.baseline_label, environment=dict(comparison.baseline_env)),
        current=ComparisonSide(source=comparison.current_label, environment=dict(comparison.current_env)),
        environment_differences=[
            EnvironmentDifference(item=d.item, baseline=d.baseline, current=d.current)
            for d in comparison.env_differences
        ],
        different_gpu=comparison.different_gpu,
        warnings=list(comparison.all_warnings),
        settings=ComparisonSettingsRecord(
            metrics=list(s.metrics),
            thresholds_pct={m: _pct(s.threshold(m)) for m in s.metrics},
            alpha=s.alpha,
            paired=comparison.paired,
            confidence=s.confidence,
            resamples=s.resamples,
            seed=s.seed,
        ),
        counts=comparison.counts(),
        rows=[ComparisonLine.model_validate(_clean(r)) for r in comparison_records(comparison, report)],
        gate=None if report is None else gate_record(report),
    )


def comparison_json(comparison: Comparison, report: GateReport | None = None) -> str:
    return to_json(comparison_document(comparison, report))


def check_document(report: GateReport) -> CheckDocument:
    return CheckDocument(**dict(gate_record(report)))


def report_json(report: GateReport) -> str:
    return to_json(check_document(report))


def report_csv(report: GateReport) -> str:
    """One line per check of a report (e.g. expectations)."""
    import pandas as pd  # only for the CSV: the other formats load no pandas

    frame = pd.DataFrame([check_record(c) for c in report.checks], columns=list(CHECK_COLUMNS))
    return frame.to_csv(index=False)
