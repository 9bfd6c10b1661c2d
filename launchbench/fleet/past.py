"""Each member's key rows against its own past: the median, over the history database's earlier runs
on the same host and GPU (UUID), of the row's median."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

from launchbench.fleet.score import FleetReport, Score
from launchbench.history.db import HistoryDB
from launchbench.history.matching import RunFilter
from launchbench.history.trend import trend
from launchbench.results.schema import RunRecord


def _same_dir(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _history_median(db: HistoryDB, score: Score, uuid: str | None, source: str | None) -> float | None:
    points = trend(
        db,
        (score.row.scenario, score.row.case, score.row.mode),
        score.row.metric,
        RunFilter(host=score.node, gpu_uuid=uuid),
    )
    earlier = [p.median for p in points if source is None or not _same_dir(p.run.run_dir, source)]
    return statistics.median(earlier) if earlier else None


def with_history(report: FleetReport, run: RunRecord, db: HistoryDB) -> FleetReport:
    """The report with every score's history median (None where the database holds no earlier run)."""
    members = {(m.node, m.device): m for m in run.members}
    scores = []
    for score in report.scores:
        member = members.get(score.member)
        uuid = member.environment.gpu.uuid if member else None
        median = _history_median(db, score, uuid, member.source if member else None)
        scores.append(dataclasses.replace(score, history_median=median))
    return dataclasses.replace(report, scores=tuple(scores))
