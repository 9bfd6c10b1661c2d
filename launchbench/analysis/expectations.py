"""The cross-field rules of a scenario's ``expect:`` entries, checked where the file is validated
(`validate`, `run`, `check`): each names a results.csv column that holds a number, and a case pattern
that matches at least one case of the scenario. A mistake is a ScenarioError (file:line:key, exit 2),
never a failed expectation."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from launchbench.analysis.columns import COLUMNS
from launchbench.errors import ScenarioError
from launchbench.scenario.core import Case
from launchbench.scenario.expand import Expansion, load_bounded, plan_expansion
from launchbench.scenario.load import ScenarioFile

if TYPE_CHECKING:
    from launchbench.results.schema import RunRecord

# results.csv columns that hold text, not a number an expectation can bound
TEXT_COLUMNS = frozenset(
    {
        "scenario",
        "case",
        "chain",
        "kinds",
        "params",
        "mode",
        "status",
        "reason",
        "throttle_reasons",
        "update_refusal_reasons",
    }
)
EXPECTABLE_COLUMNS: tuple[str, ...] = tuple(c for c in COLUMNS if c not in TEXT_COLUMNS)


def check_plan_expectations(files: Sequence[ScenarioFile], cases: Sequence[Case]) -> None:
    """Every file's ``expect:`` entries held to real columns and to its own scenario's cases, before
    anything is measured (check_expectations for each)."""
    for loaded in files:
        check_expectations(loaded, [c.case_id for c in cases if c.scenario == loaded.scenario.name])


def check_expectations(loaded: ScenarioFile, case_ids: Sequence[str]) -> None:
    """Raise ScenarioError for the first ``expect:`` entry whose metric is not a numeric results.csv
    column or whose case pattern matches none of ``case_ids`` (the scenario's expanded cases)."""
    for index, exp in enumerate(loaded.scenario.expect):
        base = ("expect", index)
        if exp.metric not in EXPECTABLE_COLUMNS:
            if exp.metric in TEXT_COLUMNS:
                message = f"metric '{exp.metric}' is a text column; an expectation needs a numeric results.csv column"
            else:
                message = f"unknown metric '{exp.metric}'"
                close = difflib.get_close_matches(exp.metric, EXPECTABLE_COLUMNS, n=1, cutoff=0.6)
                message += (
                    f"; did you mean '{close[0]}'?"
                    if close
                    else " (e.g. wall_us_per_launch, speedup; see the results.csv columns)"
                )
            raise ScenarioError(
                loaded.file,
                message,
                loaded.source.nearest_line(base + ("metric",)),
                f"expect[{index}].metric",
            )
        if not any(fnmatch.fnmatchcase(case, exp.case) for case in case_ids):
            message = f"case pattern '{exp.case}' matches no case of this scenario"
            close = difflib.get_close_matches(
                exp.case, list(dict.fromkeys(case_ids))[:10_000], n=1, cutoff=0.6
            )
            if close:
                message += f"; did you mean '{close[0]}'?"
            else:
                shown = ", ".join(list(case_ids)[:8]) + (", ..." if len(case_ids) > 8 else "")
                message += f" (cases: {shown})"
            raise ScenarioError(
                loaded.file, message, loaded.source.nearest_line(base + ("case",)), f"expect[{index}].case"
            )


def load_checked(path: str, max_cases: int | None = None) -> tuple[ScenarioFile, Expansion]:
    """Load a scenario file and apply every rule that needs no expansion of its steps: the sweep's size,
    its references, and its expectations against the case ids."""
    loaded = load_bounded(path, max_cases)
    expansion = plan_expansion(loaded, max_cases)
    check_expectations(loaded, list(expansion.case_ids(loaded.scenario)))
    return loaded, expansion


def stale_scenarios(run: RunRecord, files: Iterable[ScenarioFile]) -> list[str]:
    """Notes on scenario files whose contents differ from what the run measured."""
    recorded = {s.name: s.sha256 for s in run.scenarios}
    notes = []
    for loaded in files:
        old = recorded.get(loaded.scenario.name)
        if old and old != loaded.sha256:
            notes.append(
                f"{loaded.file} changed since the run measured scenario {loaded.scenario.name!r} "
                f"(sha256 {old[:12]}… then, {loaded.sha256[:12]}… now): expectations are today's, the numbers are the run's"
            )
    return notes
