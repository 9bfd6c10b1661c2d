"""The JSON format: the documents of report/documents.py (their schemas in report/schemas/)."""

from __future__ import annotations

from launchbench.report import ab_devices, compare_series, tables
from launchbench.report.export import Checked, Compared, Devices, Series


class JsonExporter:
    def comparison(self, subject: Compared, max_rows: int | None) -> str:
        return tables.comparison_json(subject.comparison, subject.report)

    def series(self, subject: Series, max_rows: int | None) -> str:
        return compare_series.series_json(subject.pairs)

    def check(self, subject: Checked, max_rows: int | None) -> str:
        return tables.report_json(subject.report)

    def devices(self, subject: Devices, max_rows: int | None) -> str:
        return ab_devices.devices_json(subject.verdicts)


EXPORTER = JsonExporter()
