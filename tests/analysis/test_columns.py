"""results.csv's columns come from one declaration (analysis.columns.DECLARED): the table's columns are
the declared ones in order, each row's values are the declared columns' values over the row's facts, and
a table of fewer metrics or without levels leaves exactly those columns empty."""

from __future__ import annotations

import math
from pathlib import Path

from builders import make_run

from launchbench.analysis.columns import COLUMNS, DECLARED, LEVEL_METRICS
from launchbench.analysis.table import HostLevels, Placement, RowFactsOf, noise_priors, run_table
from launchbench.results.schema import METRICS
from launchbench.results.store import load_run

RUN = Path(__file__).parents[1] / "data" / "h200" / "quickstart-a"


def _same(a: object, b: object) -> bool:
    empty = [v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b)]
    return all(empty) if any(empty) else bool(a == b)


def test_the_table_is_the_declaration_over_each_rows_facts() -> None:
    run = load_run(RUN)
    table = run_table(run)
    assert list(table.columns) == [c.name for c in DECLARED] == list(COLUMNS)
    priors = noise_priors(run)
    rows = iter(table.to_dict("records"))
    for case in run.cases:
        for mode in case.modes:
            row = next(rows)
            facts = RowFactsOf(case, mode, Placement(run.gpu_name, row["node"], row["device"]), priors)
            for column in DECLARED:
                assert _same(row[column.name], column.value(facts)), (case.case_id, mode, column.name)


def test_a_table_of_fewer_metrics_leaves_the_others_and_the_levels_empty() -> None:
    run = load_run(RUN)
    full, part = run_table(run), run_table(run, METRICS[:1], levels=HostLevels.SKIP)
    for column in DECLARED:
        left_out = (column.group == "metric" and column.metric != METRICS[0].name) or (
            column.group == "levels" and column.metric in LEVEL_METRICS
        )
        if left_out:
            assert part[column.name].isna().all(), column.name
        else:
            assert all(_same(a, b) for a, b in zip(full[column.name], part[column.name])), column.name
    assert full["wall_us_per_launch_levels"].notna().any()  # the full table does fill them


def test_each_rows_metric_is_summarised_once_and_its_levels_found_once(monkeypatch):
    """A metric's dozen columns read one summary, and its level columns one set of levels."""
    import launchbench.analysis.table as table

    run = make_run(passes=5)
    calls: dict[str, int] = {"summarize": 0, "levels": 0}
    summarize, metric_levels = table.summarize, table.metric_levels

    def counted_summarize(*args, **kwargs):
        calls["summarize"] += 1
        return summarize(*args, **kwargs)

    def counted_levels(*args, **kwargs):
        calls["levels"] += 1
        return metric_levels(*args, **kwargs)

    monkeypatch.setattr(table, "summarize", counted_summarize)
    monkeypatch.setattr(table, "metric_levels", counted_levels)
    frame = run_table(run)
    rows = sum(len(case.modes) for case in run.cases)
    assert len(frame) == rows
    assert calls["summarize"] == rows * len(METRICS)
    assert calls["levels"] == rows * len(LEVEL_METRICS)
