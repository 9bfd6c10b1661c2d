"""Every report format in one registry: a format is one module of ``report/exporters`` and one entry of
EXPORTERS (the way hyperfine's ``export`` module holds its exporters).

What is exported is a subject: one comparison (``Compared``: BASELINE → CURRENT with its gate report),
several comparisons against one baseline (``Series``), a check of a run against its expectations
(``Checked``) or ab's comparisons on several devices (``Devices``). An exporter turns each subject into
text (the Exporter protocol); ``export`` looks the format up, loads its module (so ``--help`` loads no
statistics) and asks it. The table exporter also draws a subject on a console (``draw``)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console

    from launchbench.analysis.compare import Comparison
    from launchbench.analysis.gate import GateReport
    from launchbench.report.ab_devices import DeviceVerdict

Pair = tuple["Comparison", "GateReport | None"]


@dataclass(frozen=True)
class Compared:
    """One BASELINE → CURRENT comparison and its gate report (None without a gate)."""

    comparison: Comparison
    report: GateReport | None


@dataclass(frozen=True)
class Series:
    """One BASELINE against several CURRENT runs: each pair's comparison and gate report."""

    pairs: Sequence[Pair]


@dataclass(frozen=True)
class Checked:
    """A run checked against the expectations of its scenario files."""

    report: GateReport


@dataclass(frozen=True)
class Devices:
    """`ab --devices`: each device's paired comparison and gate."""

    verdicts: Sequence[DeviceVerdict]


Subject = Compared | Series | Checked | Devices


class Exporter(Protocol):
    """One format's text of each subject. ``max_rows`` caps each table where the format has one that
    can be cut (markdown for a step summary); formats that always hold every row ignore it."""

    def comparison(self, subject: Compared, max_rows: int | None) -> str: ...

    def series(self, subject: Series, max_rows: int | None) -> str: ...

    def check(self, subject: Checked, max_rows: int | None) -> str: ...

    def devices(self, subject: Devices, max_rows: int | None) -> str: ...


class Option(Enum):
    """The command-line option that writes a format."""

    FORMAT = "--format"  # the report itself, to the terminal or -o FILE
    JUNIT = "--junit"  # a second file beside the report


@dataclass(frozen=True)
class Entry:
    """Where a format's exporter lives (a module defining ``EXPORTER``) and which option writes it."""

    module: str
    option: Option


EXPORTERS: dict[str, Entry] = {
    "table": Entry("launchbench.report.exporters.table", Option.FORMAT),
    "markdown": Entry("launchbench.report.exporters.markdown", Option.FORMAT),
    "csv": Entry("launchbench.report.exporters.csv", Option.FORMAT),
    "json": Entry("launchbench.report.exporters.json", Option.FORMAT),
    "junit": Entry("launchbench.report.exporters.junit", Option.JUNIT),
}
REPORT_FORMATS: tuple[str, ...] = tuple(n for n, e in EXPORTERS.items() if e.option is Option.FORMAT)


def exporter(fmt: str) -> Exporter:
    """The exporter of format ``fmt`` (a key of EXPORTERS)."""
    exporter: Exporter = importlib.import_module(EXPORTERS[fmt].module).EXPORTER
    return exporter


def export(fmt: str, subject: Subject, max_rows: int | None = None) -> str:
    """``subject`` as text in format ``fmt``."""
    chosen = exporter(fmt)
    if isinstance(subject, Compared):
        return chosen.comparison(subject, max_rows)
    if isinstance(subject, Series):
        return chosen.series(subject, max_rows)
    if isinstance(subject, Checked):
        return chosen.check(subject, max_rows)
    return chosen.devices(subject, max_rows)


def draw(console: Console, subject: Subject) -> None:
    """The table of ``subject`` on a rich console (colours and the console's width)."""
    from launchbench.report.exporters.table import draw_subject

    draw_subject(console, subject)


def outcome(subject: Subject) -> str:
    """The one-line verdict said after any format: PASS or FAIL and why, or the verdict counts."""
    from launchbench.report import compare_console as shown

    if isinstance(subject, Compared):
        if subject.report is None:
            return shown.verdict_counts(subject.comparison)
        return shown.outcome_line(subject.report, "regression")
    if isinstance(subject, Series):
        from launchbench.report.compare_series import series_outcome

        return series_outcome(subject.pairs)
    if isinstance(subject, Checked):
        return shown.outcome_line(subject.report, "failed expectation")
    from launchbench.report.ab_devices import devices_outcome

    return devices_outcome(subject.verdicts)
