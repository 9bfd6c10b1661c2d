"""The markdown format: for pull-request comments and $GITHUB_STEP_SUMMARY (``max_rows`` caps each
table of a comparison)."""

from __future__ import annotations

from launchbench.report import ab_devices, compare_series, markdown
from launchbench.report.export import Checked, Compared, Devices, Series


class MarkdownExporter:
    def comparison(self, subject: Compared, max_rows: int | None) -> str:
        return markdown.comparison_markdown(subject.comparison, subject.report, max_rows=max_rows)

    def series(self, subject: Series, max_rows: int | None) -> str:
        return compare_series.series_markdown(subject.pairs, max_rows=max_rows)

    def check(self, subject: Checked, max_rows: int | None) -> str:
        return markdown.check_markdown(subject.report)

    def devices(self, subject: Devices, max_rows: int | None) -> str:
        return ab_devices.devices_markdown(subject.verdicts, max_rows=max_rows)


EXPORTER = MarkdownExporter()
