"""gate.py: --fail-on rules over a comparison, and scenario expectations over a single run."""

from __future__ import annotations

from pathlib import Path

import compare_helpers
import pytest
from builders import expectation_scenario, first_graph_row
from compare_helpers import chosen_keys, comparable_keys, drifting_eager_key, pass_spread, scale_rows

from launchbench.analysis.compare import CompareSettings, compare_runs
from launchbench.analysis.coverage import CoveragePolicy
from launchbench.analysis.defaults import DEFAULT_METRICS
from launchbench.analysis.gate import (
    BlindRows,
    CheckedRun,
    ComparedRuns,
    GatePolicy,
    GateReport,
    GateRule,
    GateRuleError,
    LostRows,
    NoExpectationsError,
    ScopedExpectation,
    check_run,
    evaluate_rules,
    gate,
    gated_settings,
    parse_rule,
    run_expectations,
)
from launchbench.analysis.table import run_table
from launchbench.results.schema import RunRecord
from launchbench.scenario.model import Expectation

baseline_run = compare_helpers.baseline_run


# --------------------------------------------------------------------------------------------- rules


@pytest.mark.parametrize(
    "text, rule",
    [
        ("wall_us_per_launch:5%", GateRule("wall_us_per_launch", 0.05, "%")),
        ("latency_us:2us", GateRule("latency_us", 2.0, "us")),
        ("latency_us:0.5µs", GateRule("latency_us", 0.5, "us")),
        (" gpu_us_per_iter : 12.5% ", GateRule("gpu_us_per_iter", 0.125, "%")),
    ],
)
def test_parse_rule(text: str, rule: GateRule) -> None:
    parsed = parse_rule(text)
    assert parsed.metric == rule.metric and parsed.unit == rule.unit
    assert parsed.amount == pytest.approx(rule.amount)
    assert parse_rule(parsed.spec) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "wall_us_per_launch",
        "wall_us_per_launch:5",
        "speed:5%",
        "wall_us_per_launch:-5%",
        "wall_us_per_launch:5ms",
        ":5%",
        "",
    ],
)
def test_parse_rule_errors(text: str) -> None:
    with pytest.raises(GateRuleError):
        parse_rule(text)


def test_regressions_are_exactly_the_slower_rows(baseline_run: RunRecord) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, 1.10))
    report = evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")], blind=BlindRows.ALLOW)
    assert not report.passed
    assert {(c.scenario, c.case, c.mode) for c in report.failures} == chosen
    assert len(report.checks) == len(comparable_keys(baseline_run))
    assert report.improvements == ()
    assert all("slower" in c.message for c in report.failures)
    # a looser rule lets the same change pass
    assert evaluate_rules(comparison, [parse_rule("wall_us_per_launch:15%")], blind=BlindRows.ALLOW).passed
    # by default the rows that cannot see 5% fail too, as blind
    strict = evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")])
    blind = {(c.scenario, c.case, c.mode) for c in strict.failures if c.kind == "blind"}
    assert blind and not blind & chosen
    assert {(c.scenario, c.case, c.mode) for c in strict.failures} == chosen | blind


def test_improvements_never_fail(baseline_run: RunRecord) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, 0.90))
    report = evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")], blind=BlindRows.ALLOW)
    assert report.passed
    assert {(c.scenario, c.case, c.mode) for c in report.improvements} == chosen


def test_absolute_rule(baseline_run: RunRecord) -> None:
    chosen = chosen_keys(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, chosen, 1.10))
    deltas = {r.key: r.metric("wall_us_per_iter").delta for r in comparison.rows if r.key in chosen}
    smallest = min(deltas.values())
    loose = evaluate_rules(
        comparison, [GateRule("wall_us_per_iter", max(deltas.values()) * 1.01, "us")], blind=BlindRows.ALLOW
    )
    assert loose.passed
    tight = evaluate_rules(
        comparison, [GateRule("wall_us_per_iter", smallest * 0.99, "us")], blind=BlindRows.ALLOW
    )
    assert {(c.scenario, c.case, c.mode) for c in tight.failures} == chosen


def test_uncertain_rows_never_fail(baseline_run: RunRecord) -> None:
    """A 10% slowdown of an eager row whose passes drift by ≥ 20% is 'uncertain' (see test_compare):
    the gate fails slower rows only, so it passes and says why."""
    key = drifting_eager_key(baseline_run)
    comparison = compare_runs(baseline_run, scale_rows(baseline_run, [key], 1.10))
    rules = [parse_rule("wall_us_per_launch:5%"), parse_rule("wall_us_per_iter:0.001us")]
    report = evaluate_rules(comparison, rules, blind=BlindRows.ALLOW)
    assert report.passed
    checks = [c for c in report.checks if (c.scenario, c.case, c.mode) == key]
    assert len(checks) == 2 and all("uncertain, not significant" in c.message for c in checks)
    # the row could not have failed a 5% rule: the check says so, and by default that fails the gate
    percent = next(c for c in checks if c.rule == "wall_us_per_launch:5%")
    assert (
        percent.blind
        and percent.message.startswith("cannot detect < ")
        and "launchbench ab" in percent.message
    )
    assert any("cannot detect" in note and "--allow-blind" in note for note in report.notes)
    strict = evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")])
    failed = [c for c in strict.failures if (c.scenario, c.case, c.mode) == key]
    assert not strict.passed and [c.kind for c in failed] == ["blind"]


def test_rows_that_can_see_the_rule_are_not_blind(baseline_run: RunRecord) -> None:
    """Graph rows bound by the GPU whose passes agree within 1% have MDEs below 5%: never blind, so
    the gate fails none of them on a run compared with itself."""
    comparison = compare_runs(baseline_run, baseline_run)
    report = evaluate_rules(comparison, [parse_rule("wall_us_per_launch:5%")])
    chosen = {k for k in chosen_keys(baseline_run) if pass_spread(baseline_run, k) < 0.01}
    assert chosen
    for check in report.checks:
        if (check.scenario, check.case, check.mode) in chosen:
            assert check.passed and not check.blind, check


def test_absolute_rule_needs_a_slower_verdict(baseline_run: RunRecord) -> None:
    """3% slower on the steadiest rows: real, µs above a tiny absolute rule, but below the 5% threshold,
    so 'same' and not failed; with the threshold at 2% the same rule fails them."""
    steady = {k for k in chosen_keys(baseline_run) if pass_spread(baseline_run, k) < 0.005}
    assert steady
    current = scale_rows(baseline_run, steady, 1.03)
    rule = GateRule("wall_us_per_iter", 1e-6, "us")
    comparison = compare_runs(baseline_run, current)
    assert {r.metric("wall_us_per_iter").verdict for r in comparison.rows if r.key in steady} == {"same"}
    assert evaluate_rules(comparison, [rule], blind=BlindRows.ALLOW).passed
    strict = compare_runs(baseline_run, current, CompareSettings(default_threshold=0.02))
    failures = evaluate_rules(strict, [rule], blind=BlindRows.ALLOW).failures
    assert {(c.scenario, c.case, c.mode) for c in failures} == steady


def test_self_comparison_passes_every_rule(baseline_run: RunRecord) -> None:
    settings = CompareSettings(metrics=("wall_us_per_launch", "latency_us"))
    comparison = compare_runs(baseline_run, baseline_run, settings)
    rules = [parse_rule("wall_us_per_launch:1%"), parse_rule("latency_us:0.1us")]
    report = evaluate_rules(comparison, rules, blind=BlindRows.ALLOW)
    assert report.passed and report.checks


def test_rule_on_a_metric_not_compared_is_noted(baseline_run: RunRecord) -> None:
    comparison = compare_runs(baseline_run, baseline_run, CompareSettings(metrics=("wall_us_per_launch",)))
    report = evaluate_rules(comparison, [parse_rule("latency_us:5%")])
    assert report.checks == () and "not compared" in report.notes[0]


def test_fail_on_missing(baseline_run: RunRecord) -> None:
    dropped, *kept = baseline_run.cases
    comparison = compare_runs(baseline_run, baseline_run.model_copy(update={"cases": kept}))
    rule = parse_rule("wall_us_per_launch:5%")
    assert evaluate_rules(comparison, [rule], blind=BlindRows.ALLOW).passed
    report = evaluate_rules(comparison, [rule], lost=LostRows.FAIL, blind=BlindRows.ALLOW)
    assert {(c.case, c.mode) for c in report.failures} == {(dropped.case_id, m) for m in dropped.modes}
    assert all(c.kind == "missing" for c in report.failures)


# -------------------------------------------------------------------------------------- expectations


def test_check_run_passes_and_fails(baseline_run: RunRecord) -> None:
    scenario, case, median = first_graph_row(baseline_run)
    passing = Expectation(
        case=case, mode="graph", metric="wall_us_per_launch", max=median * 1.5, min=median * 0.5
    )
    failing = Expectation(case=case, mode="graph", metric="wall_us_per_launch", max=median * 0.5)
    report = check_run(baseline_run, [passing])
    assert report.passed and len(report.checks) == 1
    assert report.checks[0].value == pytest.approx(median)
    report = check_run(
        baseline_run, [ScopedExpectation(passing, scenario), ScopedExpectation(failing, scenario)]
    )
    assert not report.passed and len(report.failures) == 1
    assert "expected ≤" in report.failures[0].message


def test_pattern_matches_several_rows(baseline_run: RunRecord) -> None:
    table = run_table(baseline_run)
    graph = table[(table["mode"] == "graph") & table["wall_us_per_launch"].notna()]
    report = check_run(
        baseline_run, [Expectation(case="*", mode="graph", metric="wall_us_per_launch", min=0.0)]
    )
    assert report.passed and len(report.checks) == len(graph)


def test_expectation_matching_no_row_fails(baseline_run: RunRecord) -> None:
    report = check_run(baseline_run, [Expectation(case="no-such-case/*", metric="wall_us_per_launch", max=1)])
    assert not report.passed and "matches" in report.failures[0].message
    other_scenario = ScopedExpectation(Expectation(case="*", metric="wall_us_per_launch", max=1e9), "other")
    assert not check_run(baseline_run, [other_scenario]).passed


def test_speedup_and_unknown_columns(baseline_run: RunRecord) -> None:
    assert check_run(baseline_run, [Expectation(case="*", mode="graph", metric="speedup", min=0.0)]).passed
    no_value = check_run(baseline_run, [Expectation(case="*", mode="eager", metric="speedup", min=1.0)])
    assert not no_value.passed and "no value" in no_value.failures[0].message
    unknown = check_run(baseline_run, [Expectation(case="*", metric="speed", min=1.0)])
    assert not unknown.passed and "not a results.csv column" in unknown.failures[0].message


def test_empty_expectations_pass() -> None:
    assert GateReport().passed


def test_run_expectations_from_given_and_recorded_files(baseline_run: RunRecord, tmp_path: Path) -> None:
    scenario, case, median = first_graph_row(baseline_run)
    file = expectation_scenario(
        tmp_path / "s.yaml",
        scenario,
        f"  - case: '{case}'\n    metric: wall_us_per_launch\n    max: {median * 2}\n",
    )
    expectations, _ = run_expectations(baseline_run, [file])
    assert [e.scenario for e in expectations] == [scenario]
    assert check_run(baseline_run, expectations).passed

    infos = [s.model_copy(update={"file": str(file)}) for s in baseline_run.scenarios]
    recorded = baseline_run.model_copy(update={"scenarios": infos})
    expectations, notes = run_expectations(recorded)
    assert len(expectations) == len(infos) and notes


def test_run_expectations_errors(baseline_run: RunRecord, tmp_path: Path) -> None:
    infos = [s.model_copy(update={"file": str(tmp_path / "gone.yaml")}) for s in baseline_run.scenarios]
    with pytest.raises(NoExpectationsError, match="--scenario"):
        run_expectations(baseline_run.model_copy(update={"scenarios": infos}))
    empty = tmp_path / "empty.yaml"
    empty.write_text("name: x\ndescription: d\nchains:\n  c:\n    - kind: empty\n", encoding="utf-8")
    with pytest.raises(NoExpectationsError, match="no 'expect:'"):
        run_expectations(baseline_run, [empty])


# ------------------------------------------------------------------------------------ the one gate


def test_gated_settings_add_the_rules_metrics_and_lower_their_thresholds() -> None:
    rules = [parse_rule("latency_us:2%"), parse_rule("gpu_us_per_iter:3us")]
    settings = gated_settings(("wall_us_per_launch",), [(None, 0.1), ("latency_us", 0.05)], 0.02, rules)
    assert settings.metrics == ("wall_us_per_launch", "latency_us", "gpu_us_per_iter")
    assert settings.threshold("latency_us") == 0.02  # the tighter % rule
    assert settings.threshold("gpu_us_per_iter") == 0.1  # a µs rule leaves the default
    assert settings.alpha == 0.02
    assert gated_settings((), [], 0.01, []).metrics == DEFAULT_METRICS


def test_the_gate_of_a_comparison_is_its_rules_then_its_coverage(baseline_run: RunRecord) -> None:
    current = scale_rows(baseline_run, chosen_keys(baseline_run), 1.5)
    comparison = compare_runs(baseline_run, current)
    rules = (parse_rule("gpu_us_per_iter:10%"),)
    lost = baseline_run.model_copy(update={"status": "interrupted"})
    report = gate(ComparedRuns(comparison, baseline_run, current), GatePolicy(rules, allow_blind=True))
    assert not report.passed and report.of_kind("regression") and not report.of_kind("coverage")
    relaxed = CoveragePolicy(allow_interrupted=True)
    unfinished = gate(ComparedRuns(comparison, baseline_run, lost), GatePolicy(rules, allow_blind=True))
    allowed = gate(
        ComparedRuns(comparison, baseline_run, lost), GatePolicy(rules, allow_blind=True, coverage=relaxed)
    )
    assert [c.rule for c in unfinished.of_kind("coverage")] == ["--allow-interrupted"]
    assert not allowed.of_kind("coverage") and any("--allow-interrupted" in n for n in allowed.notes)


def test_the_gate_of_a_run_is_its_expectations_then_its_coverage(
    baseline_run: RunRecord, tmp_path: Path
) -> None:
    scenario, case, median = first_graph_row(baseline_run)
    expect = f"  - case: '{case}'\n    metric: wall_us_per_launch\n    max: {median * 2}\n"
    file = expectation_scenario(tmp_path / "s.yaml", scenario, expect)
    report = gate(CheckedRun(baseline_run, [file]), GatePolicy())
    assert report.passed and report.of_kind("expectation") and not report.of_kind("coverage")
    lost = baseline_run.model_copy(update={"status": "interrupted"})
    unfinished = gate(CheckedRun(lost, [file]), GatePolicy())
    assert [c.rule for c in unfinished.of_kind("coverage")] == ["--allow-interrupted"]
    allowed = gate(CheckedRun(lost, [file]), GatePolicy(coverage=CoveragePolicy(allow_interrupted=True)))
    assert allowed.passed and any("--allow-interrupted" in n for n in allowed.notes)
