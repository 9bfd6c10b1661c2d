"""benchmarks/speed_quickstart.py's analysis, on recorded numbers: the CI widths read from results.csv
(the committed H200 quickstart runs' tables), the per-row comparison, the summary line and its files."""

import csv
import importlib
import json
import sys
from pathlib import Path

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
    assert set(written[0]) == {
        "case",
        "mode",
        "metric",
        "old_ci_width",
        "new_ci_width",
        "ratio",
        "old_runs",
        "new_runs",
    }


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
