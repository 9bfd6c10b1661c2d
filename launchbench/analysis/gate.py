"""CI gates: regression rules over a comparison, and expectations over a single run → a GateReport.

Nothing here prints or exits: the CLI (or ``launchbench run --check``) maps ``GateReport.passed`` to
an exit code.

Regression rules use pytest-benchmark's syntax: ``metric:N%`` (relative change of the median) or
``metric:Nus`` (absolute change of the median, µs). A row regresses under a rule only when the
comparison's verdict for that metric is ``slower`` (significant at the comparison's alpha, change ≥
the threshold, the change's CI entirely above 0) and the change is at least the rule's amount: ``N%``
relative, or ``N`` µs between the medians for an absolute rule. So a row the comparison calls
``uncertain`` (a change no larger than the row's noise) never fails the gate. The CLI lowers a
metric's threshold to its tightest ``N%`` rule, so a rule is never looser than it says. Improvements
(verdict ``faster`` by as much) are reported, never failed.

A gate that cannot see: when a gated row's minimum detectable effect (MetricComparison.mde) exceeds
the rule's amount, the rule could not have failed on that row whatever happened. Such a check fails
(kind ``blind``: "cannot detect < 38% here"); with ``BlindRows.ALLOW`` (--allow-blind) it passes with that said.

Which rows a gate judges (``GateScope``): every row, only the GPU-bound rows (RowComparison.host_bound
false: graph replays bound by the GPU's own time, which separate runs judge to a few percent) or only
the host-bound rows (the launch cost, which ``launchbench ab`` judges). Rows outside the scope get no
check, and a note says how many.

Expectations come from a scenario file's ``expect:`` entries: a case pattern (fnmatch), a mode, a
results.csv column and a max and/or min, checked against the run table's value (the median for
timing columns). An expectation that matches no row fails.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from launchbench.analysis.checks import RULE_KINDS, CheckKind, GateCheck, GateReport
from launchbench.analysis.columns import COLUMNS
from launchbench.analysis.comparison import (
    COMPARABLE_STATUSES,
    CompareSettings,
    Comparison,
    MetricComparison,
    RowComparison,
)
from launchbench.analysis.coverage import CoveragePolicy, check_coverage, comparison_coverage
from launchbench.analysis.defaults import DEFAULT_GATE_SCOPE, DEFAULT_METRICS, DEFAULT_THRESHOLD, GateScope
from launchbench.analysis.formatting import format_change_summary
from launchbench.errors import LaunchbenchError
from launchbench.results.schema import METRIC_BY_NAME, RunRecord

if TYPE_CHECKING:
    import pandas as pd

    from launchbench.scenario.model import Expectation, Scenario

__all__ = [  # the checks' model, imported from here by report/
    "RULE_KINDS",
    "CheckKind",
    "GateCheck",
    "GateReport",
]

BLIND_ADVICE = "use `launchbench ab` or more passes"


class BlindRows(Enum):
    """What a rule does with a row whose MDE exceeds its amount (it could not have seen the change):
    fail it, or pass it with that said (--allow-blind)."""

    FAIL = "fail"
    ALLOW = "allow"


class LostRows(Enum):
    """What the rules do with a row that was ok (or budget) in the baseline and is absent or not ok in
    the current run: leave it to the coverage checks, or fail it (--fail-on-missing)."""

    IGNORE = "ignore"
    FAIL = "fail"


class GateRuleError(LaunchbenchError):
    """A --fail-on rule that cannot be parsed."""


class NoExpectationsError(LaunchbenchError):
    """check was asked to check a run but found no expectation to check."""


@dataclass(frozen=True)
class GateRule:
    """``metric:N%`` (amount is relative, 0.05) or ``metric:Nus`` (amount in µs)."""

    metric: str
    amount: float
    unit: Literal["%", "us"]

    @property
    def spec(self) -> str:
        return (
            f"{self.metric}:{self.amount * 100:g}%"
            if self.unit == "%"
            else f"{self.metric}:{self.amount:g}us"
        )

    def size(self, mc: MetricComparison) -> float:
        """The change this rule measures: relative (ratio − 1) or absolute (µs)."""
        return mc.change if self.unit == "%" else mc.delta

    def regressed(self, mc: MetricComparison) -> bool:
        """Slower (the verdict: significant, ≥ threshold, CI of the change above 0) by at least the amount."""
        return mc.verdict == "slower" and self.size(mc) >= self.amount

    def improved(self, mc: MetricComparison) -> bool:
        return mc.verdict == "faster" and -self.size(mc) >= self.amount

    def detectable(self, mc: MetricComparison) -> float:
        """The row's MDE in this rule's unit (relative, or µs of the baseline median)."""
        return mc.mde if self.unit == "%" else mc.mde * mc.baseline_median

    def blind(self, mc: MetricComparison) -> bool:
        """The row's MDE exceeds the rule's amount: a regression of that size would pass unseen."""
        return mc.compared and not math.isnan(mc.mde) and self.detectable(mc) > self.amount


_RULE = re.compile(
    r"^\s*(?P<metric>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<amount>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>%|us|µs)\s*$"
)


def parse_rule(text: str) -> GateRule:
    """``wall_us_per_launch:5%`` or ``latency_us:2us`` → GateRule; GateRuleError otherwise."""
    match = _RULE.match(text)
    if not match:
        raise GateRuleError(
            f"--fail-on {text!r}: expected METRIC:N% or METRIC:Nus, e.g. wall_us_per_launch:5%"
        )
    metric = match["metric"]
    if metric not in METRIC_BY_NAME:
        raise GateRuleError(
            f"--fail-on {text!r}: unknown metric {metric!r}; metrics: {', '.join(METRIC_BY_NAME)}"
        )
    amount = float(match["amount"])
    unit: Literal["%", "us"] = "%" if match["unit"] == "%" else "us"
    return GateRule(metric, amount / 100 if unit == "%" else amount, unit)


# ------------------------------------------------------------------------------------- regression gate


def blind_message(rule: GateRule, mc: MetricComparison) -> str:
    """'cannot detect < 38% here; use `launchbench ab` or more passes'."""
    percent = rule.detectable(mc) * 100
    amount = (
        f"{percent:.{0 if percent >= 10 else 1}f}%" if rule.unit == "%" else f"{rule.detectable(mc):.3g} µs"
    )
    return f"cannot detect < {amount} here; {BLIND_ADVICE}"


def _rule_check(
    rule: GateRule, scenario: str, case: str, mode: str, mc: MetricComparison, blind_rows: BlindRows
) -> GateCheck:
    regressed, improved = rule.regressed(mc), rule.improved(mc)
    mde = f"MDE {mc.mde * 100:.1f}%" if not math.isnan(mc.mde) else "MDE —"
    numbers = format_change_summary(
        mc.baseline_median, mc.current_median, mc.change, mc.change_ci, mc.p_value, mde
    )
    amount = rule.spec.partition(":")[2]
    blind = not regressed and rule.blind(mc)
    if regressed:
        message = f"slower by at least {amount}: {numbers}"
    elif improved:
        message = f"faster by at least {amount}: {numbers}"
    elif mc.compared and abs(rule.size(mc)) >= rule.amount and mc.verdict not in ("slower", "faster"):
        if mc.verdict == "uncertain":
            why = "not significant" if not mc.significant else "the CI of the change includes 0"
        else:
            why = f"the change is below the {mc.threshold * 100:g}% threshold"
        message = f"{mc.verdict}, {why}: {numbers}"
    else:
        message = numbers
    if blind:
        message = f"{blind_message(rule, mc)}: {message}"
    allow_blind = blind_rows is BlindRows.ALLOW
    kind: CheckKind = "blind" if blind and not allow_blind else "regression"
    passed = not regressed and not (blind and not allow_blind)
    return GateCheck(
        kind, scenario, case, mode, mc.metric, rule.spec, passed, message, mc.current_median, improved, blind
    )


def in_scope(row: RowComparison, scope: GateScope) -> bool:
    """Whether a gate of this scope judges the row."""
    return scope == "all" or row.host_bound == (scope == "host-bound")


def _missing_check(row: RowComparison) -> GateCheck:
    message = "missing from the current run" if row.current_status is None else f"current run: {row.detail}"
    message += " (--allow-missing allows it)"
    return GateCheck("missing", row.scenario, row.case, row.mode, "", "--fail-on-missing", False, message)


def evaluate_rules(
    comparison: Comparison,
    rules: Sequence[GateRule],
    lost: LostRows = LostRows.IGNORE,
    blind: BlindRows = BlindRows.FAIL,
    scope: GateScope = DEFAULT_GATE_SCOPE,
) -> GateReport:
    """Apply every rule to every compared row in ``scope``. With ``LostRows.FAIL``, a row that was ok
    (or budget) in the baseline and is absent or not ok in the current run fails too. A row whose MDE
    exceeds a rule's amount fails that rule (it could not have seen the regression) unless ``blind`` is
    ``BlindRows.ALLOW``."""
    checks: list[GateCheck] = []
    notes: list[str] = []
    for rule in rules:
        if rule.metric not in comparison.settings.metrics:
            notes.append(f"rule {rule.spec}: metric {rule.metric} was not compared")
    judged = [row for row in comparison.rows if in_scope(row, scope)]
    if len(judged) < len(comparison.rows):
        other = "host-bound" if scope == "gpu-bound" else "GPU-bound"
        notes.append(f"{len(comparison.rows) - len(judged)} {other} row(s) not gated (--gate-rows {scope})")
    for row in judged:
        for rule in rules:
            mc = row.metric(rule.metric)
            if mc is not None and mc.compared:
                checks.append(_rule_check(rule, row.scenario, row.case, row.mode, mc, blind))
        gone = row.baseline_status in COMPARABLE_STATUSES and row.current_status not in COMPARABLE_STATUSES
        if lost is LostRows.FAIL and gone:
            checks.append(_missing_check(row))
    blinded = sum(c.blind for c in checks)
    if blinded:
        allowed = " (allowed by --allow-blind)" if blind is BlindRows.ALLOW else ""
        notes.append(
            f"{blinded} gated row-metric(s) cannot detect a change of their rule's size{allowed} ({BLIND_ADVICE})"
        )
    return GateReport(tuple(checks), tuple(notes))


def blind_summary(report: GateReport) -> list[str]:
    """Per rule with blind rows: 'N of M gated rows cannot see 5%' (the rule's metric named when the
    report holds several rules)."""
    rules = list(dict.fromkeys(c.rule for c in report.of_kind(*RULE_KINDS)))
    parts = []
    for rule in rules:
        gated = [c for c in report.checks if c.rule == rule and c.kind in RULE_KINDS]
        blind = [c for c in gated if c.blind]
        if blind:
            amount = rule.partition(":")[2] if len(rules) == 1 else rule
            parts.append(f"{len(blind)} of {len(gated)} gated rows cannot see {amount}")
    return parts


# -------------------------------------------------------------------------------------- expectations


@dataclass(frozen=True)
class ScopedExpectation:
    """An expectation restricted to the rows of one scenario (None: rows of every scenario)."""

    expectation: Expectation
    scenario: str | None = None


def expectations_of(scenario: Scenario) -> list[ScopedExpectation]:
    return [ScopedExpectation(e, scenario.name) for e in scenario.expect]


def _bounds(exp: Expectation) -> str:
    parts = []
    if exp.min is not None:
        parts.append(f"≥ {exp.min:g}")
    if exp.max is not None:
        parts.append(f"≤ {exp.max:g}")
    return " and ".join(parts)


def _numeric(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _expectation_checks(table: pd.DataFrame, scoped: ScopedExpectation) -> list[GateCheck]:
    import pandas as pd

    exp, scenario = scoped.expectation, scoped.scenario
    rule = f"{exp.metric} {_bounds(exp)}"
    if exp.metric not in COLUMNS:
        message = f"{exp.metric!r} is not a results.csv column (e.g. wall_us_per_launch, speedup)"
        return [GateCheck("expectation", scenario, exp.case, exp.mode, exp.metric, rule, False, message)]
    in_scope = table if scenario is None else table[table["scenario"] == scenario]
    mask = [
        mode == exp.mode and fnmatch.fnmatchcase(str(case), exp.case)
        for mode, case in zip(in_scope["mode"], in_scope["case"])
    ]
    matched = in_scope[pd.Series(mask, index=in_scope.index, dtype=bool)]
    if matched.empty:
        where = f" of scenario {scenario!r}" if scenario else ""
        message = f"no {exp.mode} row{where} matches case pattern {exp.case!r}"
        return [GateCheck("expectation", scenario, exp.case, exp.mode, exp.metric, rule, False, message)]
    checks = []
    for _, row in matched.iterrows():
        value = _numeric(row[exp.metric])
        if value is None:
            passed, message = (
                False,
                f"no value for {exp.metric} (status {row['status']}{': ' + row['reason'] if row['reason'] else ''})",
            )
        else:
            too_low = exp.min is not None and value < exp.min
            too_high = exp.max is not None and value > exp.max
            passed = not (too_low or too_high)
            message = f"{exp.metric} = {value:.4g}" + ("" if passed else f", expected {_bounds(exp)}")
        checks.append(
            GateCheck(
                "expectation",
                row["scenario"],
                row["case"],
                exp.mode,
                exp.metric,
                rule,
                passed,
                message,
                value,
            )
        )
    return checks


def check_run(
    run: RunRecord, expectations: Iterable[Expectation | ScopedExpectation], table: pd.DataFrame | None = None
) -> GateReport:
    """Evaluate expectations on one run (``table``: its results table where the caller has it). A bare
    Expectation applies to rows of every scenario."""
    from launchbench.analysis.table import run_table

    table = run_table(run) if table is None else table
    checks: list[GateCheck] = []
    for item in expectations:
        scoped = item if isinstance(item, ScopedExpectation) else ScopedExpectation(item)
        checks.extend(_expectation_checks(table, scoped))
    return GateReport(tuple(checks))


def check_against_scenarios(
    run: RunRecord, scenario_files: Sequence[str | Path] = (), table: pd.DataFrame | None = None
) -> GateReport:
    """`check` and `run --check`: the run against its scenarios' expectations (see run_expectations),
    the notes on where they came from first (``table``: the run's results table, where the caller has
    it). Raises NoExpectationsError when there is nothing to check."""
    expectations, notes = run_expectations(run, scenario_files)
    report = check_run(run, expectations, table)
    return replace(report, notes=(*notes, *report.notes))


def run_expectations(
    run: RunRecord, scenario_files: Sequence[str | Path] = ()
) -> tuple[list[ScopedExpectation], list[str]]:
    """The expectations to check on a run, and notes on where they came from.

    From the given scenario files when there are any, else from the scenario files recorded in the run
    (those that still exist). Raises NoExpectationsError when there is nothing to check.
    """
    from launchbench.analysis.expectations import load_checked, stale_scenarios

    notes: list[str] = []
    if scenario_files:
        paths = [Path(p) for p in scenario_files]
    else:
        paths = []
        for info in run.scenarios:
            path = Path(info.file)
            if path.is_file():
                paths.append(path)
            else:
                notes.append(f"scenario file {info.file} recorded for {info.name!r} is not found")
        if not paths:
            recorded = ", ".join(s.file for s in run.scenarios) or "none recorded"
            raise NoExpectationsError(
                f"no scenario file to take expectations from ({recorded}); give one with --scenario"
            )
    expectations: list[ScopedExpectation] = []
    for path in paths:
        loaded = load_checked(str(path))[0]  # a misspelt metric or a pattern that matches no case: exit 2
        scenario = loaded.scenario
        expectations.extend(expectations_of(scenario))
        notes.extend(stale_scenarios(run, [loaded]))
        notes.append(f"{path}: {len(scenario.expect)} expectation(s) for scenario {scenario.name!r}")
    if not expectations:
        raise NoExpectationsError(f"{', '.join(map(str, paths))}: no 'expect:' entries; nothing to check")
    return expectations, notes


# ---------------------------------------------------------------------------------------- the gate


@dataclass(frozen=True)
class GatePolicy:
    """What fails a gate: the --fail-on rules of a comparison's gate, the rows they judge (--gate-rows),
    whether blind rows are allowed, and what the other --allow-* flags relax (coverage.CoveragePolicy)."""

    rules: tuple[GateRule, ...] = ()
    rows: GateScope = DEFAULT_GATE_SCOPE
    allow_blind: bool = False
    coverage: CoveragePolicy = CoveragePolicy()


@dataclass(frozen=True)
class ComparedRuns:
    """A comparison and the two runs it compared: what compare's and ab's gates judge."""

    comparison: Comparison
    baseline: RunRecord
    current: RunRecord


@dataclass(frozen=True)
class CheckedRun:
    """One run and the scenario files whose expectations it is checked against (none: the files the
    run recorded): what check's gate judges."""

    run: RunRecord
    scenario_files: Sequence[str | Path] = ()


def gate(subject: ComparedRuns | CheckedRun, policy: GatePolicy) -> GateReport:
    """The gate of compare, ab and check: the rules over a comparison (evaluate_rules; a row lost in the
    current run fails unless allowed) or the expectations over a run (check_against_scenarios), then
    what the gate failed to cover (coverage.py: nothing checked, no rows in common, an unfinished run,
    a gated row measured in a disturbed state), each failing unless its --allow-* flag relaxes it."""
    if isinstance(subject, CheckedRun):
        report = check_against_scenarios(subject.run, subject.scenario_files)
        return check_coverage(report, subject.run, policy.coverage)
    comparison = subject.comparison
    lost = LostRows.IGNORE if policy.coverage.allow_missing else LostRows.FAIL
    blind = BlindRows.ALLOW if policy.allow_blind else BlindRows.FAIL
    report = evaluate_rules(comparison, policy.rules, lost, blind, policy.rows)
    return comparison_coverage(report, comparison, subject.baseline, subject.current, policy.coverage)


def gated_settings(
    metrics: Sequence[str],
    thresholds: Sequence[tuple[str | None, float]],
    alpha: float,
    rules: Sequence[GateRule],
) -> CompareSettings:
    """The settings of a gated comparison: ``metrics`` (none: DEFAULT_METRICS) and every rule's metric;
    the last threshold without a metric as the default (none: DEFAULT_THRESHOLD), the others per
    metric. A metric named in a ``N%`` rule gets a threshold no larger than N%: the gate fails only
    rows whose verdict is slower, so a rule tighter than the threshold would otherwise never fire.
    CompareSettingsError on a setting that cannot be used."""
    chosen = tuple(dict.fromkeys([*(metrics or DEFAULT_METRICS), *(r.metric for r in rules)]))
    default = next((v for m, v in reversed(thresholds) if m is None), DEFAULT_THRESHOLD)
    per_metric = {m: v for m, v in thresholds if m is not None}
    for rule in rules:
        if rule.unit == "%":
            per_metric[rule.metric] = min(per_metric.get(rule.metric, default), rule.amount)
    return CompareSettings(metrics=chosen, default_threshold=default, thresholds=per_metric, alpha=alpha)
