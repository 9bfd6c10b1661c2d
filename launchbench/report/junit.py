"""JUnit XML, which CI systems show as test results: one testcase per row and metric of a comparison
(a failure element where a --fail-on rule finds a regression, skipped where the row was not compared),
or one per expectation check."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from launchbench.analysis.compare import Comparison
from launchbench.analysis.gate import GateReport
from launchbench.report.comparison_table import lines, summary


def _document(*suites: ET.Element) -> str:
    counts = ("tests", "failures", "errors", "skipped")
    root = ET.Element("testsuites", {k: str(sum(int(s.get(k, "0")) for s in suites)) for k in counts})
    root.set("name", "launchbench")
    root.extend(suites)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def comparison_junit(comparison: Comparison, report: GateReport | None = None) -> str:
    """The comparison's testsuite (comparison_suite) as a JUnit document."""
    return _document(comparison_suite(comparison, report))


def suites_junit(suites: list[ET.Element]) -> str:
    """Several testsuites (e.g. one per device of `ab --devices`) as one JUnit document."""
    return _document(*suites)


def comparison_suite(
    comparison: Comparison,
    report: GateReport | None = None,
    name: str = "launchbench compare",
    classname: str = "launchbench.compare",
) -> ET.Element:
    """One testcase per (row, metric), its classname ``classname.SCENARIO``; failures are the report's
    failed checks of that row and metric, of type ``regression``, ``blind`` (the row cannot see the rule) or ``missing`` (the row is missing or
    failed in the current run: every one of its testcases fails). The gate's coverage failures (it
    checked nothing, an unfinished run) and its rows measured in a disturbed state are testcases of
    their own."""
    suite = ET.Element("testsuite", {"name": name})
    tests = failures = skipped = 0
    for line in lines(comparison, report):
        row, mc = line.row, line.metric
        tests += 1
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"{classname}.{row.scenario}",
                "name": f"{row.case} [{row.mode}] {mc.metric}",
            },
        )
        checks = report.checks_for(row.key, mc.metric) if report is not None else ()
        hits = [c for c in checks if not c.passed]
        blind = [c for c in checks if c.blind and c.passed]
        if hits:
            failures += 1
            message = "; ".join(f"{c.rule}: {c.message}" for c in hits)
            kinds = {c.kind for c in hits}
            kind = kinds.pop() if len(kinds) == 1 else "regression"
            ET.SubElement(case, "failure", {"message": message, "type": kind}).text = summary(line)
        elif not mc.compared:
            skipped += 1
            ET.SubElement(case, "skipped", {"message": summary(line)})
        else:
            warnings = "".join(f"\nwarning: {c.rule}: {c.message}" for c in blind)
            ET.SubElement(case, "system-out").text = summary(line) + warnings
    for check in report.of_kind("coverage", "disturbed") if report is not None else ():
        tests += 1
        test = check.rule if check.kind == "coverage" else f"{check.subject} disturbed"
        case = ET.SubElement(suite, "testcase", {"classname": f"{classname}.gate", "name": test})
        if not check.passed:
            failures += 1
            ET.SubElement(case, "failure", {"message": check.message, "type": check.kind})
    if comparison.all_warnings:
        ET.SubElement(suite, "system-out").text = "\n".join(f"warning: {w}" for w in comparison.all_warnings)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return suite


def report_junit(report: GateReport, name: str = "launchbench check") -> str:
    """One testcase per check of a gate report (e.g. expectations)."""
    suite = ET.Element("testsuite", {"name": name})
    for check in report.checks:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"launchbench.check.{check.scenario or 'any'}",
                "name": f"{check.case} [{check.mode}] {check.rule}",
            },
        )
        if check.passed:
            ET.SubElement(case, "system-out").text = check.message
        else:
            ET.SubElement(case, "failure", {"message": check.message, "type": check.kind})
    suite.set("tests", str(len(report.checks)))
    suite.set("failures", str(len(report.failures)))
    suite.set("errors", "0")
    suite.set("skipped", "0")
    return _document(suite)
