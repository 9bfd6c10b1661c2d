"""The JUnit XML format, which CI systems show as test results (report/junit.py says what a testcase is)."""

from __future__ import annotations

from launchbench.report import ab_devices, compare_series, junit
from launchbench.report.export import Checked, Compared, Devices, Series


class JunitExporter:
    def comparison(self, subject: Compared, max_rows: int | None) -> str:
        return junit.comparison_junit(subject.comparison, subject.report)

    def series(self, subject: Series, max_rows: int | None) -> str:
        return compare_series.series_junit(subject.pairs)

    def check(self, subject: Checked, max_rows: int | None) -> str:
        return junit.report_junit(subject.report)

    def devices(self, subject: Devices, max_rows: int | None) -> str:
        return ab_devices.devices_junit(subject.verdicts)


EXPORTER = JunitExporter()
