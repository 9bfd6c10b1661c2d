"""A gate that cannot see fails: a gated row whose MDE exceeds its rule fails compare's (and ab's) gate
by default, --allow-blind relaxes it, --gate-rows picks the rows a gate judges, and the outcome line,
the step summary and JUnit name every blind and every missing row."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import Result
from compare_helpers import REAL_BASELINE, REAL_LONGER, REAL_REPEAT, invoke, needs_real

from launchbench.results.store import load_run, write_run

RULE = ["--fail-on", "wall_us_per_launch:5%"]


def _gate(result: Result) -> dict:
    return json.loads(result.stdout)["gate"]


def _subjects(checks: list[dict], kind: str) -> set[str]:
    return {f"{c['scenario']}/{c['case']} [{c['mode']}]" for c in checks if c["kind"] == kind}


@needs_real(REAL_BASELINE, REAL_REPEAT)
def test_blind_rows_fail_by_default_and_the_outcome_counts_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    a, b = str(REAL_BASELINE), str(REAL_REPEAT)
    result = invoke("compare", a, b, *RULE, "-q")
    assert result.exit_code == 1
    assert result.stdout.strip() == "FAIL: 10 of 16 gated rows cannot see 5%"
    old_flag = invoke("compare", a, b, *RULE, "--fail-on-blind", "-q")  # hidden, kept: the default now
    assert old_flag.exit_code == 1 and old_flag.stdout == result.stdout
    allowed = invoke("compare", a, b, *RULE, "--allow-blind", "-q")
    assert allowed.exit_code == 0
    assert allowed.stdout.strip() == (
        "PASS: no regression (16 checks; 10 of 16 gated rows cannot see 5%, allowed by --allow-blind)"
    )
    assert "--fail-on-blind" not in invoke("compare", "--help").stdout
    assert "--allow-blind" in invoke("ab", "--help").stdout


@needs_real(REAL_BASELINE, REAL_REPEAT)
def test_summary_and_junit_name_every_blind_and_missing_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    current = load_run(REAL_REPEAT)
    dropped = current.cases[-1]
    write_run(tmp_path / "current", current.model_copy(update={"cases": current.cases[:-1]}))
    junit = tmp_path / "junit.xml"
    args = ["compare", str(REAL_BASELINE), str(tmp_path / "current"), *RULE, "--junit", str(junit)]
    result = invoke(*args, "--format", "json")
    assert result.exit_code == 1
    checks = _gate(result)["checks"]
    blind, missing = _subjects(checks, "blind"), _subjects(checks, "missing")
    assert len(blind) >= 8 and missing == {f"quickstart/{dropped.case_id} [{m}]" for m in dropped.modes}
    outcome = result.stderr.strip().splitlines()[-1]
    assert outcome.startswith("FAIL: ") and "gated rows cannot see 5%" in outcome
    assert outcome.endswith(f"; {len(missing)} rows missing")
    text = summary.read_text()
    assert text.startswith(f"## launchbench compare: ❌ {outcome.removeprefix('FAIL: ')}\n")
    blind_section = text.split("### Cannot see the rule")[1].split("###")[0]
    missing_section = text.split("### Missing rows")[1].split("###")[0]
    assert all(f"`{s}`" in blind_section for s in blind)
    assert all(f"`{s}`" in missing_section for s in missing)
    failures: dict[str, set[str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is not None:
            row = case.get("name", "").rsplit(" ", 1)[0]
            failures.setdefault(failure.get("type", ""), set()).add(f"quickstart/{row}")
    assert failures.get("blind") == blind and failures.get("missing") == missing


@needs_real(REAL_BASELINE, REAL_REPEAT, REAL_LONGER)
def test_gate_rows_gpu_bound_sees_a_longer_chain_and_passes_a_a() -> None:
    rule = ["--gate-rows", "gpu-bound", "--fail-on", "wall_us_per_iter:8%", "--format", "json"]
    aa = invoke("compare", str(REAL_BASELINE), str(REAL_REPEAT), *rule)
    assert aa.exit_code == 0, aa.stderr
    gate = _gate(aa)
    assert {c["mode"] for c in gate["checks"]} == {"graph"} and len(gate["checks"]) == 7
    assert "9 host-bound row(s) not gated (--gate-rows gpu-bound)" in gate["notes"]
    longer = invoke("compare", str(REAL_BASELINE), str(REAL_LONGER), *rule)
    assert longer.exit_code == 1
    assert _subjects(_gate(longer)["checks"], "blind") == set()
    assert len([c for c in _gate(longer)["checks"] if c["kind"] == "regression" and not c["passed"]]) >= 6
    host = invoke("compare", str(REAL_BASELINE), str(REAL_REPEAT), "--gate-rows", "host-bound", *RULE, "-q")
    assert host.exit_code == 1 and host.stdout.strip() == "FAIL: 9 of 9 gated rows cannot see 5%"


def test_gate_rows_that_select_nothing_check_nothing(tmp_path: Path) -> None:
    """A scope with no row in it is a gate that checked nothing: it fails, and says so."""
    from builders import make_run

    run = make_run()
    eager = [c.model_copy(update={"modes": {"eager": c.modes["eager"]}}) for c in run.cases]
    write_run(tmp_path / "a", run.model_copy(update={"cases": eager}))
    result = invoke("compare", str(tmp_path / "a"), str(tmp_path / "a"), "--gate-rows", "gpu-bound", *RULE)
    gate_lines = [line for line in result.stdout.splitlines() if "evaluated no check" in line]
    assert result.exit_code == 1 and gate_lines, result.stdout
