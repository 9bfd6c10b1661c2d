"""The CSV format: compare's long table (one line per row and metric), or one line per check."""

from __future__ import annotations

from launchbench.report import tables
from launchbench.report.export import Checked, Compared, Devices, Series


class CsvExporter:
    def comparison(self, subject: Compared, max_rows: int | None) -> str:
        return tables.comparison_csv(subject.comparison, subject.report)

    def series(self, subject: Series, max_rows: int | None) -> str:
        from launchbench.report import compare_series

        return compare_series.series_csv(subject.pairs)

    def check(self, subject: Checked, max_rows: int | None) -> str:
        return tables.report_csv(subject.report)

    def devices(self, subject: Devices, max_rows: int | None) -> str:
        from launchbench.report import ab_devices  # its console and documents, for ab's devices only

        return ab_devices.devices_csv(subject.verdicts)


EXPORTER = CsvExporter()
