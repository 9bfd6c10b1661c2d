"""run --devices on the console: one line per finished case, marked with its device (the runners of all
devices report from their own threads, so each line is printed whole under a lock), then a summary per
device."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from launchbench.analysis.table import run_table
from launchbench.report.console import Verbosity
from launchbench.report.terminal import literal
from launchbench.results.environment import describe_environment
from launchbench.results.schema import CaseResult, RunRecord
from launchbench.scenario.core import Case


class DeviceLines:
    """Per device, RunEvents that print a line per finished case (and the run's start) under one lock;
    with ``sides`` 2 (ab's A and B) a case's line comes once both sides have finished it."""

    def __init__(self, console: Console, verbosity: Verbosity = Verbosity.NORMAL, sides: int = 1):
        self.console, self.verbosity, self.sides = console, verbosity, sides
        self.lock = threading.Lock()

    def for_device(self, device: int) -> _DeviceEvents:
        return _DeviceEvents(self, device)

    def print(self, text: str) -> None:
        """A line of the run's progress: not printed when QUIET."""
        if self.verbosity is not Verbosity.QUIET:
            self.print_always(text)

    def print_always(self, text: str) -> None:
        """A failure or a note: printed even when QUIET."""
        with self.lock:
            self.console.print(text)


class _DeviceEvents:
    def __init__(self, lines: DeviceLines, device: int):
        self.lines, self.device = lines, device
        self.passes: dict[tuple[str, str], int] = {}
        self.finished: dict[tuple[str, str], int] = {}

    def run_started(self, run_dir: Path, cases: Sequence[Case], environment: dict[str, Any]) -> None:
        self.passes = {(c.scenario, c.case_id): c.measure.passes for c in cases}
        self.lines.print(
            f"[bold]device {self.device}[/] {literal(describe_environment(environment))} → {literal(str(run_dir))}"
        )

    def case_started(self, case: Case, index: int, total: int) -> None:
        return None

    def case_progress(self, fraction: float) -> None:
        return None

    def case_finished(self, result: CaseResult) -> None:
        if result.error:
            self.lines.print_always(
                f"[red]✗ device {self.device} {literal(result.scenario)} {literal(result.case_id)}: {literal(result.error)}[/]"
            )
            return
        key = (result.scenario, result.case_id)
        if result.passes_done < self.passes.get(key, 1):
            return
        self.finished[key] = self.finished.get(key, 0) + 1
        if self.lines.sides > 1 and self.finished[key] == self.lines.sides:
            self.lines.print(
                f"[green]✓[/] device {self.device} {literal(result.scenario)} {literal(result.case_id)} on both sides"
            )
        elif self.lines.sides == 1:
            self.lines.print(
                f"[green]✓[/] device {self.device} {literal(result.scenario)} {literal(result.case_id)} in {result.elapsed_s:.1f} s"
            )

    def note(self, message: str) -> None:
        self.lines.print_always(f"[yellow]note:[/] device {self.device}: {literal(message)}")


def _cpus(cpus: frozenset[int]) -> str:
    return ",".join(map(str, sorted(cpus))) if cpus else "not pinned"


def print_device_summary(console: Console, run: RunRecord, cpus: Mapping[int, frozenset[int]]) -> None:
    """Per device: its GPU, the CPUs its workers ran on, its cases, failures and median eager and graph
    wall time per launch over its rows."""
    frame = run_table(run)
    table = Table(title=f"{', '.join(s.name for s in run.scenarios)} per device")
    for header in ("device", "GPU", "CPUs", "cases", "failed", "eager µs/launch", "graph µs/launch"):
        table.add_column(header, justify="left" if header in ("GPU", "CPUs") else "right")
    for member in run.members:
        rows = frame[frame["device"] == member.device]
        cases = [c for c in run.cases if c.device == member.device]
        medians = {
            mode: rows[rows["mode"] == mode]["wall_us_per_launch"].median() for mode in ("eager", "graph")
        }
        table.add_row(
            str(member.device),
            literal(member.environment.gpu.name or "unknown GPU"),
            _cpus(cpus.get(member.device if member.device is not None else -1, frozenset())),
            str(len(cases)),
            str(sum(1 for c in cases if c.error)),
            *(f"{v:.3g}" if v == v else "—" for v in medians.values()),
        )
    console.print(table)
