"""What a gate found: one GateCheck per rule and row (or expectation and row, or coverage finding), and
the GateReport that holds them with its notes. The gates that make them: launchbench.analysis.gate
(rules, expectations and the one ``gate`` function) and launchbench.analysis.coverage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CheckKind = Literal[
    "regression", "missing", "expectation", "blind", "coverage", "disturbed"
]  # coverage and disturbed: see coverage.py
RULE_KINDS: frozenset[CheckKind] = frozenset({"regression", "blind"})  # the checks of a --fail-on rule


@dataclass(frozen=True)
class GateCheck:
    """One rule applied to one row (or one expectation that matched no row)."""

    kind: CheckKind
    scenario: str | None
    case: str
    mode: str
    metric: str
    rule: str
    passed: bool
    message: str
    value: float | None = None
    improved: bool = False
    blind: bool = False  # the row's MDE exceeds the rule: it could not have failed

    @property
    def subject(self) -> str:
        prefix = f"{self.scenario}/" if self.scenario else ""
        return f"{prefix}{self.case} [{self.mode}]"


@dataclass(frozen=True)
class GateReport:
    checks: tuple[GateCheck, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failures(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if not c.passed)

    @property
    def improvements(self) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if c.improved)

    @property
    def blind(self) -> tuple[GateCheck, ...]:
        """Checks whose row could not have shown a change of the rule's size."""
        return tuple(c for c in self.checks if c.blind)

    def of_kind(self, *kinds: CheckKind) -> tuple[GateCheck, ...]:
        return tuple(c for c in self.checks if c.kind in kinds)

    def checks_for(self, key: tuple[str | None, str, str], metric: str) -> tuple[GateCheck, ...]:
        """The checks that judge one row's metric: its rules for that metric, and a --fail-on-missing
        check of the row (which has no metric: it judges every metric of the row)."""
        return tuple(
            c for c in self.checks if (c.scenario, c.case, c.mode) == key and c.metric in (metric, "")
        )

    def verdict_for(self, key: tuple[str | None, str, str], metric: str) -> str:
        """'fail', 'pass', or '' when no check judges the row's metric."""
        checks = self.checks_for(key, metric)
        return "" if not checks else ("pass" if all(c.passed for c in checks) else "fail")
