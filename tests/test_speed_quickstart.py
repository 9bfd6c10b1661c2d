"""benchmarks/speed_quickstart.py's analysis, on recorded numbers: the CI widths read from results.csv
(the committed H200 quickstart runs' tables), the per-row comparison, the summary line and its files."""

import csv
import importlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from launchbench.report.run_files import write_tables
from launchbench.results.store import load_run

ROOT = Path(__file__).parent.parent
H200 = Path(__file__).parent / "data" / "h200"


@pytest.fixture(scope="module")
def speed():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("speed_quickstart")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The committed H200 quickstart runs a and b with their tables written (results.csv)."""
    dirs = {}
    for name in ("quickstart-a", "quickstart-b"):
        run_dir = tmp_path_factory.mktemp(name)
        write_tables(run_dir, load_run(H200 / name))
        dirs[name] = run_dir
    return dirs


def test_ci_widths_take_every_metric_with_both_bounds(speed):
    rows = [
        {
            "case": "c",
            "mode": "eager",
            "wall_us_per_launch_ci_low": "2.0",
            "wall_us_per_launch_ci_high": "2.5",
        },
        {"case": "c", "mode": "graph", "wall_us_per_launch_ci_low": "", "wall_us_per_launch_ci_high": ""},
        {"case": "d", "mode": "eager", "latency_us_ci_low": "1", "latency_us_ci_high": "nan"},
    ]
    assert speed.ci_widths(rows) == {("c", "eager", "wall_us_per_launch"): 0.5}


def test_the_recorded_runs_widths_and_their_comparison(speed, tables):
    a = speed.read_widths(tables["quickstart-a"])
    b = speed.read_widths(tables["quickstart-b"])
    assert len({(case, mode) for case, mode, _ in a}) == 16  # 8 cases, eager and graph
    key = ("empty/length=1000", "graph", "wall_us_per_launch")
    with (tables["quickstart-a"] / "results.csv").open(newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if (r["case"], r["mode"]) == key[:2])
    assert a[key] == pytest.approx(
        float(row["wall_us_per_launch_ci_high"]) - float(row["wall_us_per_launch_ci_low"])
    )
    same = speed.compare_widths([a, a], [a])
    assert {r.ratio for r in same} == {1.0}
    rows = {(r.case, r.mode, r.metric): r for r in speed.compare_widths([a], [b, b])}
    assert rows[key].ratio == pytest.approx(b[key] / a[key])
    assert (rows[key].old_runs, rows[key].new_runs) == (1, 2)
    assert speed.read_widths(tables["quickstart-a"] / "absent") == {}


def test_the_summary_line(speed):
    runs = [
        speed.RunFigures("old", 0, 57.0, 500.0, 0, "o0", 0.5),
        speed.RunFigures("new", 0, 19.0, 480.0, 0, "n0", 0.5),
        speed.RunFigures("new", 1, 21.0, 480.0, 0, "n1", 0.5),
        speed.RunFigures("old", 1, 1.0, 80.0, 1, "o1", 0.5),  # a failed run is not counted
    ]
    rows = [
        speed.RowComparison("a", "eager", "wall_us_per_launch", 1.0, 0.8, 0.8, 1, 2),
        speed.RowComparison("a", "graph", "wall_us_per_launch", 1.0, 1.1, 1.1, 1, 2),
        speed.RowComparison("b", "graph", "latency_us", 1.0, 0.9, 0.9, 1, 2),
    ]
    assert speed.summary_line("quickstart", runs, rows) == (
        "quickstart: old 57.0 s (1 runs), new 20.0 s (2 runs), 2.85x faster; CI width new/old: median 0.90,"
        " widest 1.10 (a graph wall_us_per_launch); 1 of 3 rows wider"
    )
    assert (
        speed.summary_line("q", runs[:1], [])
        == "q: old 57.0 s (1 runs), new no run, no row measured on both sides"
    )


def test_the_sides_alternate(speed):
    assert speed.schedule(3, 3) == [("old", 0), ("new", 0), ("old", 1), ("new", 1), ("old", 2), ("new", 2)]
    assert speed.schedule(1, 2) == [("old", 0), ("new", 0), ("new", 1)]
    assert speed.schedule(1, 2, first="new") == [("new", 0), ("old", 0), ("new", 1)]


def test_analyze_writes_the_json_and_the_precision_table(speed, tables, tmp_path):
    runs = [
        speed.RunFigures("old", 0, 57.0, 500.0, 0, str(tables["quickstart-a"]), 0.5),
        speed.RunFigures("new", 0, 19.0, 480.0, 0, str(tables["quickstart-b"]), 0.5),
    ]
    out, table = tmp_path / "q.json", tmp_path / "q.csv"
    line = speed.analyze("quickstart", runs, {"host": "h"}, out, table)
    document = json.loads(out.read_text())
    assert document["summary"] == line and document["host"] == "h" and len(document["runs"]) == 2
    with table.open(newline="") as handle:
        written = list(csv.DictReader(handle))
    assert len(written) == len(document["rows"]) > 16
    assert list(written[0]) == speed.TABLE_COLUMNS + speed.TEST_COLUMNS
    assert written[0]["p_wider"] is None  # one run a side: no per-row test
    assert document["old_halves"] is None and document["all_rows"] is None


def _width_runs(rng, runs, wide_factor=1.0):
    """Runs of 16 rows (8 cases, eager, two metrics and their per_iter twins), log-normal widths; the
    first case's eager wall widened ``wide_factor`` times."""
    out = []
    for _ in range(runs):
        run = {}
        for case in range(8):
            for metric in ("wall_us_per_launch", "cpu_us_per_launch"):
                width = float(np.exp(rng.normal(0.0, 0.3))) * (1 + case)
                if case == 0 and metric == "wall_us_per_launch":
                    width *= wide_factor
                run[(f"c{case}", "eager", metric)] = width
                run[(f"c{case}", "eager", metric.replace("launch", "iter"))] = width * 10
        out.append(run)
    return out


def test_the_width_test_finds_a_row_wider_and_none_in_an_a_a(speed):
    import width_test

    rng = np.random.default_rng(7)
    old, new = _width_runs(rng, 6), _width_runs(rng, 6, wide_factor=3.0)
    tests = width_test.row_tests(old, new)
    assert len(tests) == 16  # the per_iter twins left out
    wider = [t.key for t in tests if t.wider]
    assert wider == [("c0", "eager", "wall_us_per_launch")]
    flagged = next(t for t in tests if t.wider)
    assert flagged.low > 1 and 2 < flagged.ratio < 4.5 and 1 < flagged.detectable < 2
    quiet = _width_runs(np.random.default_rng(11), 6)
    same = width_test.row_tests(old, quiet)
    assert not any(t.wider for t in same)  # flags any row in about 5% of such draws (simulated: 5.3%)
    together = width_test.overall(old, new)
    assert together is not None and together.low < together.ratio < together.high
    assert "rows wider (BH 5%): 1 of 16" in width_test.summary(tests, together)
    assert speed.half_against_half(quiet).startswith("rows wider (BH 5%): 0 of 16")
    assert speed.half_against_half(old[:3]) is None
    assert width_test.row_tests(old[:1], new) == [] and width_test.overall(old, new[:1]) is None


def test_the_step_up_rejects_the_smallest_p_values_below_their_line(speed):
    import width_test

    assert width_test.step_up([0.001, 0.03, 0.035, 0.5], fdr=0.05) == [True, True, True, False]  # step up
    assert width_test.step_up([0.001, 0.03, 0.04, 0.5], fdr=0.05) == [True, False, False, False]
    assert width_test.step_up([0.04, 0.03, 0.02, 0.01], fdr=0.05) == [True, True, True, True]
    assert width_test.step_up([0.2, 0.3]) == [False, False]


def test_a_row_with_a_zero_width_in_some_run_is_not_tested(speed):
    import width_test

    old = [{("a", "graph", "wall_us_per_launch"): 1.0, ("b", "graph", "wall_us_per_launch"): 0.0}] * 2
    new = [{("a", "graph", "wall_us_per_launch"): 1.1, ("b", "graph", "wall_us_per_launch"): 0.5}] * 2
    assert width_test.tested_keys(old, new) == [("a", "graph", "wall_us_per_launch")]


def test_each_side_runs_with_its_own_extra_arguments_and_scenario(speed, tmp_path, monkeypatch):
    seen = []

    def run_once(side, index, source, scenario, run_dir, log, extra=()):
        seen.append((side, index, source, scenario, tuple(extra)))
        return speed.RunFigures(side, index, 1.0, 1.0, 0, str(run_dir), None)

    monkeypatch.setattr(speed, "run_once", run_once)
    args = speed.argparse.Namespace(
        old=tmp_path,
        old_runs=1,
        new_runs=2,
        first="old",
        old_extra="",
        new_extra="--max-time 2 --passes 5",
        old_scenario=None,
    )
    new_file = tmp_path / "s.yaml"
    runs = speed.measure(args, new_file, tmp_path, lambda done: None)
    assert [r.side for r in runs] == ["old", "new", "new"]
    assert seen == [
        ("old", 0, tmp_path.resolve(), new_file.resolve(), ()),
        ("new", 0, speed.ROOT, new_file, ("--max-time", "2", "--passes", "5")),
        ("new", 1, speed.ROOT, new_file, ("--max-time", "2", "--passes", "5")),
    ]
    seen.clear()
    old_file = tmp_path / "old" / "scenarios" / "quickstart.yaml"
    args.old_scenario, args.new_runs = old_file, 0
    speed.measure(args, new_file, tmp_path, lambda done: None)
    assert seen == [("old", 0, tmp_path.resolve(), old_file.resolve(), ())]
