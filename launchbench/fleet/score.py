"""The fleet report's numbers: per node and GPU the key rows of a merged run, each scored against the
fleet's median and against the node's own history.

Key rows: ``eager empty launch`` (eager wall µs per launch of the longest chain of ``empty`` kernels),
``graph per node`` (that chain's graph replay, wall µs per launch: per graph node), ``cudaGraphLaunch
CPU`` (the host's CPU µs per iteration of the shortest empty chain's graph replay: one cudaGraphLaunch)
and any row the user names. Outlier rule: a member (node and GPU) is an outlier on a row when its
median is more than THRESHOLD above the fleet's median of the members' medians AND the lower bound of
its own 95% interval lies above the fleet median (faster than the fleet is never an outlier). An
outlier is named with the environment entries in which it differs from most of the fleet."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from launchbench.analysis.table import run_table
from launchbench.errors import LaunchbenchError
from launchbench.results.metadata import Environment
from launchbench.results.schema import MemberRun, RunRecord

DEFAULT_THRESHOLD = 0.10
# the environment entries an outlier is described by: label → path into a member's environment
ENVIRONMENT_FIELDS: dict[str, Callable[[Environment], object]] = {
    "driver": lambda env: env.driver,
    "CPU model": lambda env: env.host.cpu,
    "governor": lambda env: env.host.governor,
    "NUMA node": lambda env: env.gpu.numa_node,
    "kernel": lambda env: env.host.kernel,
}


class FleetReportError(LaunchbenchError):
    """A run the fleet report cannot read, or a row it cannot find."""


@dataclass(frozen=True)
class KeyRow:
    label: str
    scenario: str
    case: str
    mode: str
    metric: str


@dataclass(frozen=True)
class Score:
    """One member's value of one key row, against the fleet and its own history (None: no history)."""

    row: KeyRow
    node: str
    device: int | None
    median: float
    ci_low: float
    ci_high: float
    fleet_median: float
    history_median: float | None = None
    outlier: bool = False

    @property
    def vs_fleet(self) -> float:
        return self.median / self.fleet_median - 1 if self.fleet_median > 0 else math.nan

    @property
    def vs_history(self) -> float | None:
        return None if not self.history_median else self.median / self.history_median - 1

    @property
    def member(self) -> tuple[str, int | None]:
        return (self.node, self.device)


@dataclass(frozen=True)
class Difference:
    field: str
    value: str
    fleet: str  # the value most of the fleet has


@dataclass(frozen=True)
class Outlier:
    node: str
    device: int | None
    scores: tuple[Score, ...]
    differences: tuple[Difference, ...]


@dataclass(frozen=True)
class FleetReport:
    rows: tuple[KeyRow, ...]
    scores: tuple[Score, ...]
    outliers: tuple[Outlier, ...]
    threshold: float
    members: int


def _empty_cases(frame: pd.DataFrame) -> pd.DataFrame:
    empty = frame[(frame["kinds"] == "empty") & frame["iterations_per_shape"].isna()]
    return empty.drop_duplicates(["scenario", "case"])


def default_rows(frame: pd.DataFrame) -> list[KeyRow]:
    """The key rows the run holds (none without a chain of empty kernels)."""
    empty = _empty_cases(frame)
    if empty.empty:
        return []
    longest = empty.loc[empty["launches_per_iter"].idxmax()]
    shortest = empty.loc[empty["launches_per_iter"].idxmin()]
    return [
        KeyRow("eager empty launch", longest["scenario"], longest["case"], "eager", "wall_us_per_launch"),
        KeyRow("graph per node", longest["scenario"], longest["case"], "graph", "wall_us_per_launch"),
        KeyRow("cudaGraphLaunch CPU", shortest["scenario"], shortest["case"], "graph", "cpu_us_per_iter"),
    ]


def user_row(frame: pd.DataFrame, text: str, metric: str) -> KeyRow:
    """``CASE/MODE`` or ``SCENARIO/CASE/MODE`` (a case id may hold slashes) → the row it names."""
    rest, sep, mode = text.rpartition("/")
    if not sep or not rest or not mode:
        raise FleetReportError(f"--row {text!r}: give CASE/MODE, e.g. empty/length=10/eager")
    for scenario, case in frame[["scenario", "case"]].drop_duplicates().itertuples(index=False):
        if rest in (case, f"{scenario}/{case}") and ((frame["case"] == case) & (frame["mode"] == mode)).any():
            return KeyRow(f"{case} {mode}", scenario, case, mode, metric)
    raise FleetReportError(f"--row {text!r}: the run holds no case {rest!r} measured in mode {mode!r}")


def _value(env: Environment, item: Callable[[Environment], object]) -> str:
    value = item(env)
    return "unknown" if value is None else str(value)


def differences(member: MemberRun, members: Sequence[MemberRun]) -> tuple[Difference, ...]:
    """The environment entries where ``member`` differs from the value most members have."""
    out = []
    for label, item in ENVIRONMENT_FIELDS.items():
        counts = Counter(_value(m.environment, item) for m in members)
        common, _ = counts.most_common(1)[0]
        mine = _value(member.environment, item)
        if mine != common:
            out.append(Difference(label, mine, common))
    return tuple(out)


def _member_scores(frame: pd.DataFrame, row: KeyRow, threshold: float) -> list[Score]:
    rows = frame[
        (frame["scenario"] == row.scenario) & (frame["case"] == row.case) & (frame["mode"] == row.mode)
    ]
    values = [
        (str(r["node"]), None if pd.isna(r["device"]) else int(r["device"]), float(r[row.metric]),
         float(r[f"{row.metric}_ci_low"]), float(r[f"{row.metric}_ci_high"]))
        for _, r in rows.iterrows()
        if pd.notna(r[row.metric])
    ]  # fmt: skip
    if not values:
        return []
    fleet = statistics.median(v[2] for v in values)
    return [
        Score(row, node, device, median, low, high, fleet,
              outlier=median > fleet * (1 + threshold) and low > fleet)
        for node, device, median, low, high in values
    ]  # fmt: skip


def score_fleet(run: RunRecord, rows: Sequence[KeyRow] | None = None, threshold: float = DEFAULT_THRESHOLD,
                extra: Sequence[str] = (), metric: str = "wall_us_per_launch") -> FleetReport:  # fmt: skip
    """Every member's key rows scored against the fleet; the outliers with how they differ."""
    frame = run_table(run)
    chosen = list(rows) if rows is not None else default_rows(frame)
    chosen += [user_row(frame, text, metric) for text in extra]
    if not chosen:
        raise FleetReportError(
            "the run holds no chain of empty kernels for the key rows; name a row with --row CASE/MODE"
        )
    scores = [s for row in chosen for s in _member_scores(frame, row, threshold)]
    members = run.members or []
    by_key = {(m.node, m.device): m for m in members}
    outliers = []
    for key in dict.fromkeys(s.member for s in scores if s.outlier):
        member = by_key.get(key)
        found = tuple(s for s in scores if s.member == key and s.outlier)
        outliers.append(Outlier(key[0], key[1], found, differences(member, members) if member else ()))
    count = len({s.member for s in scores})
    return FleetReport(tuple(chosen), tuple(scores), tuple(outliers), threshold, count)
