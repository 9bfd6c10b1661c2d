"""ab --devices: one paired run per GPU at once (run.ab_devices), then each GPU's comparison and gate,
written as ab writes one (report.ab_devices), and the exit code over all GPUs."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from launchbench.cli.ab import AbOutput, judge, measured, said_failed_cases
from launchbench.cli.common import EXIT_FAIL, EXIT_OK
from launchbench.cli.history import ingest_after_run, wants_history

if TYPE_CHECKING:
    from launchbench.analysis.compare import CompareSettings
    from launchbench.analysis.gate import GatePolicy
    from launchbench.report.ab_devices import DeviceVerdict
    from launchbench.run.ab import Side
    from launchbench.run.ab_devices import DevicePair
    from launchbench.run.runner import RunOptions


def _pinned(
    listed: tuple[int, ...] | None, cpu_text: str, side: Side, options: RunOptions
) -> dict[int, tuple[int, ...]]:
    from launchbench.run.ab_devices import pinned_devices

    allowed = frozenset(os.sched_getaffinity(0))
    return pinned_devices(listed, cpu_text, side.variant, options.backend_factory, allowed)


def _verdicts(
    pairs: Sequence[DevicePair], out: AbOutput, settings: CompareSettings, gate: GatePolicy | None
) -> list[DeviceVerdict]:
    from launchbench.report.ab_devices import DeviceVerdict

    verdicts = []
    for pair in pairs:
        a_dir, b_dir = pair.run_dirs(out.root)
        comparison, report = judge(pair.a, pair.b, (str(a_dir), str(b_dir)), settings, gate)
        verdicts.append(DeviceVerdict(pair.device, pair.cpus, comparison, report))
    return verdicts


def _write_markdown(verdicts: Sequence[DeviceVerdict], out: AbOutput) -> None:
    """OUT/comparison.md over every device, OUT/devices/N/comparison.md each device's own."""
    from launchbench.report.ab_devices import devices_markdown
    from launchbench.report.markdown import comparison_markdown
    from launchbench.run.ab_devices import device_dir

    (out.root / "comparison.md").write_text(devices_markdown(verdicts), encoding="utf-8")
    for v in verdicts:
        text = comparison_markdown(v.comparison, v.report, title=f"launchbench ab, device {v.device}")
        (device_dir(out.root, v.device) / "comparison.md").write_text(text, encoding="utf-8")


def ab_on_devices(
    listed: tuple[int, ...] | None,
    cpu_text: str,
    sides: tuple[Side, Side],
    options: RunOptions,
    settings: CompareSettings,
    gate: GatePolicy | None,
    out: AbOutput,
) -> int:
    """ab on every listed device at once; each device's comparison and gate written; the exit code (1
    when any device's gate fails or a case failed on any device)."""
    from launchbench.cli.output import publish
    from launchbench.report.ab_devices import failed_devices
    from launchbench.report.console import Verbosity
    from launchbench.report.devices import DeviceLines
    from launchbench.report.export import Devices
    from launchbench.report.terminal import Stream, make_console
    from launchbench.run.ab_devices import run_ab_devices

    console = make_console(stream=Stream.STDERR if out.data_on_stdout else Stream.STDOUT)
    lines = DeviceLines(console, Verbosity.QUIET if out.quiet else Verbosity.NORMAL, sides=2)

    def measure() -> list[DevicePair]:
        cpus = _pinned(listed, cpu_text, sides[0], options)
        return run_ab_devices(sides, out.root, options, cpus, lines.for_device, sys.argv)

    where = f"what each device's sides measured is in {out.root}/devices/N/a and {out.root}/devices/N/b"
    pairs = measured(measure, console, lambda: None, out, where)
    verdicts = _verdicts(pairs, out, settings, gate)
    publish(Devices(verdicts), out.fmt, out.output, out.junit, quiet=False)
    _write_markdown(verdicts, out)
    failed = [said_failed_cases(p.a, p.b, where=f"device {p.device}: ") for p in pairs]
    code = EXIT_FAIL if failed_devices(verdicts) or any(failed) else EXIT_OK
    if wants_history(out.history, out.db):
        dirs = [d for p in pairs for d in p.run_dirs(out.root)]
        code = max(code, ingest_after_run(out.db, *dirs, err=out.data_on_stdout))
    return code
