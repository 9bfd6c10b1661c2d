"""ab --devices: each device's paired comparison and gate, and the verdict over all of them (the gate
fails when any device's gate fails), in every form ab writes: the console, markdown, CSV, JSON and
JUnit (one testsuite per device, its testcases' classnames ``launchbench.ab.deviceN.SCENARIO``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateReport
from launchbench.report.compare_console import failure_parts, outcome_line, render_comparison
from launchbench.report.documents import AbDevicesDocument, DeviceComparisonDocument, to_json
from launchbench.report.junit import comparison_suite, suites_junit
from launchbench.report.markdown import comparison_markdown
from launchbench.report.tables import comparison_document, comparison_frame
from launchbench.report.terminal import literal


@dataclass(frozen=True)
class DeviceVerdict:
    """One device's paired comparison, its gate (None without --fail-on) and the CPUs its sides ran on."""

    device: int
    cpus: tuple[int, ...]
    comparison: Comparison
    report: GateReport | None

    @property
    def failed(self) -> bool:
        return self.report is not None and not self.report.passed


def failed_devices(verdicts: Sequence[DeviceVerdict]) -> list[int]:
    return [v.device for v in verdicts if v.failed]


def devices_outcome(verdicts: Sequence[DeviceVerdict]) -> str:
    """One line: PASS over every device, or FAIL naming each device whose gate failed and what failed."""
    reports = [v.report for v in verdicts if v.report is not None]
    if not reports:
        return outcome_line(None, "regression")
    failed = [v for v in verdicts if v.failed]
    if failed:
        return "FAIL: " + "; ".join(
            f"device {v.device}: {'; '.join(failure_parts(v.report))}" for v in failed if v.report
        )
    checks = sum(len(r.checks) for r in reports)
    return f"PASS: no regression on {len(verdicts)} device(s) ({checks} checks)"


def _placed(v: DeviceVerdict) -> str:
    return f"CPU {','.join(map(str, v.cpus))}" if v.cpus else "not pinned"


def render_devices(console: Console, verdicts: Sequence[DeviceVerdict]) -> None:
    """Each device's comparison under a line naming the device, then the verdict over all devices."""
    for n, v in enumerate(verdicts):
        console.print(f"{'' if n == 0 else chr(10)}[bold]device {v.device}[/] ({_placed(v)})")
        render_comparison(console, v.comparison, v.report)
    passed = not failed_devices(verdicts)
    console.print(f"[{'bold green' if passed else 'bold red'}]{literal(devices_outcome(verdicts))}[/]")


def devices_markdown(verdicts: Sequence[DeviceVerdict], max_rows: int | None = None) -> str:
    """A headline over all devices, then each device's comparison (comparison_markdown) as a section."""
    names = ", ".join(str(v.device) for v in verdicts)
    failed = failed_devices(verdicts)
    if all(v.report is None for v in verdicts):
        verdict = ""
    elif failed:
        verdict = f": ❌ the gate fails on device {', '.join(map(str, failed))}"
    else:
        verdict = ": ✅ no regression on any device"
    parts = [f"# launchbench ab on devices {names}{verdict}", ""]
    for v in verdicts:
        title = f"device {v.device} ({_placed(v)})"
        parts.append(comparison_markdown(v.comparison, v.report, max_rows, title=title))
    return "\n".join(parts)


def devices_csv(verdicts: Sequence[DeviceVerdict]) -> str:
    """compare's long table of every device, a ``device`` column first."""
    import pandas as pd  # only for the CSV: the other formats load no pandas

    frames = [comparison_frame(v.comparison, v.report).assign(device=v.device) for v in verdicts]
    frame = pd.concat(frames, ignore_index=True)
    return frame[["device", *(c for c in frame.columns if c != "device")]].to_csv(index=False)


def devices_json(verdicts: Sequence[DeviceVerdict]) -> str:
    """``passed`` (null without a gate), ``failed_devices``, and per device compare's JSON document."""
    gated = any(v.report is not None for v in verdicts)
    devices = [
        DeviceComparisonDocument(
            device=v.device,
            cpus=list(v.cpus),
            **dict(comparison_document(v.comparison, v.report)),
        )
        for v in verdicts
    ]
    passed = not failed_devices(verdicts) if gated else None
    return to_json(AbDevicesDocument(passed=passed, failed_devices=failed_devices(verdicts), devices=devices))


def devices_junit(verdicts: Sequence[DeviceVerdict]) -> str:
    """One testsuite per device; classnames ``launchbench.ab.deviceN.SCENARIO``."""
    return suites_junit(
        [
            comparison_suite(
                v.comparison,
                v.report,
                f"launchbench ab device {v.device}",
                f"launchbench.ab.device{v.device}",
            )
            for v in verdicts
        ]
    )
