"""The table format: the rich tables the terminal shows, as plain text for a file (no cell cut)."""

from __future__ import annotations

from rich.console import Console

from launchbench.report import ab_devices, compare_console, compare_series
from launchbench.report.export import Checked, Compared, Devices, Series, Subject


def draw_subject(console: Console, subject: Subject) -> None:
    """The subject's table and outcome on ``console``."""
    if isinstance(subject, Compared):
        compare_console.render_comparison(console, subject.comparison, subject.report)
    elif isinstance(subject, Series):
        compare_series.render_series(console, subject.pairs)
    elif isinstance(subject, Checked):
        compare_console.render_checks(console, subject.report)
    else:
        ab_devices.render_devices(console, subject.verdicts)


def _text(subject: Subject) -> str:
    return compare_console.render_text(lambda console: draw_subject(console, subject))


class TableExporter:
    def comparison(self, subject: Compared, max_rows: int | None) -> str:
        return _text(subject)

    def series(self, subject: Series, max_rows: int | None) -> str:
        return _text(subject)

    def check(self, subject: Checked, max_rows: int | None) -> str:
        return _text(subject)

    def devices(self, subject: Devices, max_rows: int | None) -> str:
        return _text(subject)


EXPORTER = TableExporter()
