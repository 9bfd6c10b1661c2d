"""What a gate covered: a gate that checked nothing, or checked a run that did not finish, fails.

`compare --fail-on` and `check` add these to their report (GateCheck of kind ``coverage``, which fail
the gate, and notes, which do not), each with its reason and the flag that relaxes it:

- zero evaluated checks (no row compared on a gated metric; no expectation matched a row with a value):
  fails; ``--allow-empty`` makes it a note;
- no rows in common between baseline and current: fails; ``--allow-empty`` makes it a note;
- a gated row missing in the current run: fails (evaluate_rules' missing check); ``--allow-missing``;
- a gated row whose MDE exceeds its rule: fails (evaluate_rules' blind check); ``--allow-blind``;
- a gated row measured in a disturbed state in either run (the worker's reference moved beyond its bound
  after the case: its numbers are not a fresh process's): fails, one check per row (kind ``disturbed``);
  ``--allow-disturbed`` makes it a note;
- the current run interrupted, failed or never finished: fails; ``--allow-interrupted`` makes it a note;
- the baseline interrupted, failed or never finished: a note;
- a scenario that ran from different file contents (sha256) on the two sides, or whose file changed
  since the run: a note;
- a scenario whose floor layers were measured in different process layouts on the two sides (each layer
  in a process of its own, or every layer but torch in one): a note.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from launchbench.analysis.checks import RULE_KINDS, GateCheck, GateReport
from launchbench.analysis.comparison import Comparison, RowKey
from launchbench.results.schema import RunRecord


@dataclass(frozen=True)
class CoveragePolicy:
    allow_empty: bool = False
    allow_missing: bool = False
    allow_interrupted: bool = False
    allow_disturbed: bool = False


def _coverage(rule: str, message: str) -> GateCheck:
    return GateCheck("coverage", None, "gate", "coverage", "", rule, False, message)


def unfinished(run: RunRecord) -> str | None:
    """Why a run is not a finished run, or None."""
    if run.status == "complete":
        return None
    cases = f"{len(run.cases)} case{'s' if len(run.cases) != 1 else ''} recorded"
    if run.status == "running":
        return f"never finished (status 'running': the process was killed?; {cases})"
    return f"{run.status} ({cases})"


DISTURBED = "measured in a disturbed state (the worker's reference moved more than 3% after the case)"


def _disturbed(report: GateReport, rows: Iterable[tuple[RowKey, int]], allowed: bool) -> GateReport:
    """The report with a failing check per gated row (one that a rule or an expectation judged) whose
    ``rows`` count of disturbed passes is not zero; notes instead when ``allowed``."""
    gated = {(c.scenario, c.case, c.mode) for c in report.checks if c.kind in (*RULE_KINDS, "expectation")}
    hits = [(key, count) for key, count in rows if count and (key in gated or (None, *key[1:]) in gated)]
    if not hits:
        return report
    if allowed:
        names = ", ".join(f"{case} [{mode}]" for (_, case, mode), _ in hits)
        return replace(report, notes=(*report.notes, f"{names}: {DISTURBED} (allowed by --allow-disturbed)"))
    checks = [
        GateCheck(
            "disturbed",
            scenario,
            case,
            mode,
            "",
            "--allow-disturbed",
            False,
            f"{count} pass(es) {DISTURBED}; pass --allow-disturbed to allow it",
        )  # fmt: skip
        for (scenario, case, mode), count in hits
    ]
    return replace(report, checks=(*report.checks, *checks))


def run_disturbed(run: RunRecord) -> list[tuple[RowKey, int]]:
    """Every row of a run with its passes measured in a disturbed state."""
    return [
        ((case.scenario, case.case_id, mode), result.disturbed_passes)
        for case in run.cases
        for mode, result in case.modes.items()
    ]


def _apply(report: GateReport, failing: list[tuple[bool, str, str]], notes: Iterable[str]) -> GateReport:
    """``failing``: (relaxed, flag, message); a relaxed one becomes a note."""
    checks = list(report.checks)
    extra = list(notes)
    for relaxed, flag, message in failing:
        if relaxed:
            extra.append(f"{message} (allowed by {flag})")
        else:
            checks.append(_coverage(flag, f"{message}; pass {flag} to allow it"))
    return replace(report, checks=tuple(checks), notes=(*report.notes, *extra))


def comparison_coverage(
    report: GateReport,
    comparison: Comparison,
    baseline: RunRecord,
    current: RunRecord,
    policy: CoveragePolicy,
) -> GateReport:
    """The regression gate's report with what it failed to cover."""
    failing: list[tuple[bool, str, str]] = []
    notes: list[str] = []
    common = [row for row in comparison.rows if row.only_in is None]
    if not common:
        failing.append(
            (
                policy.allow_empty,
                "--allow-empty",
                f"the runs have no rows in common (baseline {sum(1 for r in comparison.rows if r.only_in == 'baseline')} "
                f"rows, current {sum(1 for r in comparison.rows if r.only_in == 'current')})",
            )
        )
    elif not report.of_kind(*RULE_KINDS):
        failing.append(
            (
                policy.allow_empty,
                "--allow-empty",
                "the gate evaluated no check: no row was compared on a gated metric",
            )
        )
    why = unfinished(current)
    if why:
        failing.append((policy.allow_interrupted, "--allow-interrupted", f"the current run {why}"))
    why = unfinished(baseline)
    if why:
        notes.append(f"warning: the baseline run {why}")
    notes.extend(scenario_differences(baseline, current))
    notes.extend(floor_layout_differences(baseline, current))
    rows = [(row.key, row.disturbed) for row in comparison.rows]
    return _apply(_disturbed(report, rows, policy.allow_disturbed), failing, notes)


def check_coverage(report: GateReport, run: RunRecord, policy: CoveragePolicy) -> GateReport:
    """The expectation gate's report with what it failed to cover."""
    failing: list[tuple[bool, str, str]] = []
    evaluated = [c for c in report.checks if c.kind == "expectation" and c.value is not None]
    if not evaluated:
        failing.append(
            (policy.allow_empty, "--allow-empty", "no expectation was evaluated: no matching row has a value")
        )
    why = unfinished(run)
    if why:
        failing.append((policy.allow_interrupted, "--allow-interrupted", f"the run {why}"))
    return _apply(_disturbed(report, run_disturbed(run), policy.allow_disturbed), failing, [])


def scenario_differences(baseline: RunRecord, current: RunRecord) -> list[str]:
    """Notes on scenarios both runs measured from different file contents."""
    before = {s.name: s.sha256 for s in baseline.scenarios}
    notes = []
    for info in current.scenarios:
        old = before.get(info.name)
        if old and info.sha256 and old != info.sha256:
            notes.append(
                f"scenario {info.name!r} ran from different file contents (sha256 {old[:12]}… in the baseline, "
                f"{info.sha256[:12]}… in the current run): the cases may differ"
            )
    return notes


FLOOR_LAYOUTS = {
    "layer": "each layer in a process of its own",
    "shared": "every layer but torch in one process",
}


def floor_layouts(record: RunRecord) -> dict[str, str]:
    """Per scenario, how its floor layers were measured, read from the processes that measured them:
    ``shared`` where every measured layer but torch has one process id, ``layer`` where they have
    several; a scenario with fewer than two such layers measured tells nothing and is left out."""
    pids: dict[str, dict[str, int]] = {}
    for case in record.cases:
        if case.kinds != "floor" or case.chain == "torch":
            continue
        host = case.first_host
        if host is not None and host.pid is not None:
            pids.setdefault(case.scenario, {}).setdefault(case.chain, host.pid)
    return {
        scenario: "shared" if len(set(layers.values())) == 1 else "layer"
        for scenario, layers in pids.items()
        if len(layers) >= 2
    }


def floor_layout_differences(baseline: RunRecord, current: RunRecord) -> list[str]:
    """Notes on scenarios whose floor layers the two runs measured in different process layouts."""
    before, after = floor_layouts(baseline), floor_layouts(current)
    return [
        f"the floor layers of scenario {name!r} were measured {FLOOR_LAYOUTS[before[name]]} in the baseline and "
        f"{FLOOR_LAYOUTS[layout]} in the current run: a layer's loop reads slower in a process that has run "
        "other layers' loops (docs/floor.md), so a change of its rows may be the layout's"
        for name, layout in after.items()
        if name in before and before[name] != layout
    ]
