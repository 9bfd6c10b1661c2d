"""The benchmark scripts' pure parts, without a GPU: the A/A rule on the committed H200 runs and the
fidelity script's round-by-round ratios."""

import ast
import importlib
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from launchbench.analysis.table import run_table
from launchbench.results.store import load_run, write_run

ROOT = Path(__file__).parent.parent
H200 = Path(__file__).parent / "data" / "h200"


@pytest.fixture(scope="module")
def scripts():  # aa_check.py, imported from benchmarks/
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("aa_check")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_aa_rule_passes_a_run_against_itself_and_fails_a_shifted_copy(scripts):
    table = run_table(load_run(H200 / "quickstart-a"))
    same = scripts.compare(table, table)
    assert same["pass"].all() and (same["diff_pct"] == 0).all()
    shifted = table.copy()
    for column in [c for c in table.columns if c.startswith("wall_us_per_launch")]:
        shifted[column] = (
            table[column] * 3
        )  # every CI moves with the median: host-bound rows' CIs are ±40% wide
    verdicts = scripts.compare(table, shifted)
    wall = verdicts[verdicts["metric"] == "wall_us_per_launch"]
    assert not wall["pass"].any()
    assert verdicts[verdicts["metric"] != "wall_us_per_launch"]["pass"].all()


def test_aa_rule_skips_what_neither_run_measured_and_fails_what_one_run_lacks(scripts):
    """A graph that could not be captured has no numbers in either run: not a failed A/A row (the
    library's non-capturable graphs failed 12 of 208 row-metrics of a run against itself)."""
    table = run_table(load_run(ROOT / "results" / "library-h200"))
    assert table["wall_us_per_launch"].isna().any()
    same = scripts.compare(table, table)
    assert same["pass"].all() and same["median_a"].notna().all()
    lacking = table.copy()
    first_measured = lacking["latency_us"].first_valid_index()
    lacking.loc[first_measured, "latency_us"] = float("nan")
    assert not scripts.compare(table, lacking)["pass"].all()


def test_fidelity_compares_graph_rows_per_turn_and_eager_rows_level_to_level():
    fidelity = _benchmark_module("fidelity")
    # graph: each turn's launchbench median over the same turn's bare median; the median over turns
    row = fidelity.graph_row("empty/length=100", [0.515, 0.70, 0.512], [0.51, 0.51, 0.51])
    assert row.ratio == pytest.approx(0.515 / 0.51) and row.within and row.ratio_max > 1.3
    assert not fidelity.graph_row("x", [0.69], [0.51]).within  # the slowdown of an unlaunched upload
    # eager: the host sits at one of two levels; each level against the same level of the bare loop
    assert fidelity.levels([4.4, 6.3, 4.6, 6.1]) == [[4.4, 4.6], [6.1, 6.3]]
    assert fidelity.levels([4.4, 4.5, 4.7]) == [[4.4, 4.5, 4.7]]
    both = fidelity.eager_rows("e", [4.5, 4.6, 6.2, 6.4], [4.4, 4.5, 6.3])
    assert [(r.compared, r.within) for r in both] == [("low", True), ("high", True)]
    one_sided = fidelity.eager_rows("e", [4.5, 6.3, 6.4], [4.6, 4.7])
    assert [(r.compared, r.within) for r in one_sided] == [("low", True), ("unmatched", None)]
    assert not fidelity.eager_rows("e", [5.4, 5.5], [4.5, 4.6])[0].within  # 20% apart at one level each


def test_fidelity_reads_a_cpu_list_as_taskset_writes_it():
    fidelity = _benchmark_module("fidelity")
    assert fidelity.cpu_list("2-5") == {2, 3, 4, 5}
    assert fidelity.cpu_list("3,5,7") == {3, 5, 7}
    assert fidelity.cpu_list("0-1,8") == {0, 1, 8}


def test_fidelity_pools_processes_and_decides_only_where_the_interval_allows():
    fidelity = _benchmark_module("fidelity")
    same = fidelity.pooled_row("g", "graph", [0.512, 0.513, 0.511, 0.512], [0.512, 0.511, 0.513])
    assert same.compared == "pooled" and same.within is True and same.ratio_min <= 1 <= same.ratio_max
    slower = fidelity.pooled_row("g", "graph", [0.61, 0.62, 0.615, 0.612], [0.512, 0.511, 0.513])
    assert slower.within is False and slower.ratio_min > 1.03  # the whole interval beyond +3%
    spread = fidelity.pooled_row("e", "eager", [4.3, 6.2, 9.0, 4.5, 8.8], [4.4, 9.1, 6.0])
    assert spread.within is None and spread.ratio_min < 0.93 and spread.ratio_max > 1.07  # undecided


def test_the_bare_loop_imports_nothing_of_launchbench():
    tree = ast.parse((ROOT / "benchmarks" / "bare_loop.py").read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "cupy" in names and not [n for n in names if n.split(".")[0] == "launchbench"]


def _benchmark_module(name):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_power_study_rebuilds_a_run_from_its_own_passes():
    """Cutting a run into passes and putting them back gives the run again; a factor scales every series."""
    study = _benchmark_module("power_study")
    run = load_run(ROOT / "results" / "quickstart-h200")
    passes = study.passes_of(run)
    assert {len(p) for p in passes.values()} == {5}
    rebuilt = study.with_passes(run, passes)
    for case, again in zip(run.cases, rebuilt.cases, strict=True):
        for mode in case.modes:
            assert again.pass_sizes(mode) == case.pass_sizes(mode)
            assert again.samples(mode, "wall_s_per_iter") == pytest.approx(
                case.samples(mode, "wall_s_per_iter")
            )
    doubled = study.with_passes(run, passes, 2.0)
    case = run.cases[0]
    assert doubled.cases[0].samples("eager", "wall_s_per_iter") == pytest.approx(
        2 * case.samples("eager", "wall_s_per_iter")
    )


def test_compare_speed_repeats_cases_under_new_ids():
    speed = _benchmark_module("compare_speed")
    run = load_run(ROOT / "results" / "quickstart-h200")
    big = speed.scaled(run, 20)
    ids = [c.case_id for c in big.cases]
    assert len(ids) == len(set(ids)) == 20 and big.cases[8].modes == run.cases[0].modes


def test_speed_plot_gives_each_copy_a_chain_of_its_own():
    """The "distinct" run: every copy of the 8 cases a parameter of its own, so a figure has more
    chains than it draws."""
    speed = _benchmark_module("speed_plot")
    run = load_run(ROOT / "results" / "quickstart-h200")
    big = speed.distinct(run, 20)
    ids = [c.case_id for c in big.cases]
    assert len(ids) == len(set(ids)) == 20 and big.cases[8].modes == run.cases[0].modes
    assert [c.params["size"] for c in big.cases[::8]] == [0, 1, 2]
    assert big.cases[9].params == {**run.cases[1].params, "size": 1}


def test_fleet_case_sets_name_the_rows_a_run_lacks_or_adds():
    case_sets = _benchmark_module("fleet_case_sets")
    plain = case_sets.case_set(H200 / "quickstart-a")
    assert len(plain) == 16 and case_sets.differences(plain, list(reversed(plain))) == ([], [])
    fewer = plain[1:] + [("quickstart", "other", "eager")]
    assert case_sets.differences(plain, fewer) == ([plain[0]], [("quickstart", "other", "eager")])


def test_the_suite_benchmark_sums_each_workers_test_cpu_per_file(tmp_path):
    """speed_tests.py reads the files benchmarks/_test_cpu.py writes (one per xdist worker): the CPU
    and wall sums of the tests, the totals per file, the slowest tests first."""

    speed = _benchmark_module("speed_tests")
    tests = [("tests/a.py::one", 2.0, 3.0), ("tests/b.py::two", 5.0, 5.5), ("tests/a.py::three", 4.0, 4.0)]
    for worker, part in (("gw0", tests[:2]), ("gw1", tests[2:])):
        rows = [{"test": name, "cpu_s": cpu, "wall_s": wall} for name, cpu, wall in part]
        document = {"worker": worker, "collection_cpu_s": 1.5, "tests": rows}
        (tmp_path / f"{worker}.json").write_text(json.dumps(document))
    summary = speed.per_test(tmp_path, top=2)
    assert summary["workers"] == 2 and summary["collection_cpu_s"] == {"gw0": 1.5, "gw1": 1.5}
    assert summary["tests_cpu_s"] == 11.0 and summary["tests_wall_s"] == 12.5
    assert summary["files"] == [
        {"file": "tests/a.py", "cpu_s": 6.0, "wall_s": 7.0},
        {"file": "tests/b.py", "cpu_s": 5.0, "wall_s": 5.5},
    ]
    assert [t["test"] for t in summary["slowest_tests"]] == ["tests/b.py::two", "tests/a.py::three"]


def test_canary_moves_reads_one_move_per_case_pass_and_counts_those_past_the_bound(tmp_path):
    """On a committed run: one move per case-pass (52 in fidelity-h200-g's first turn), none past 3%;
    a run with one reading moved 4% counts it past the bound and as its largest."""
    moves = _benchmark_module("canary_moves")
    committed = moves.summary(ROOT / "results" / "fidelity-h200-g" / "run-0")
    assert committed["case_passes"] == 52 and committed["past_bound"] == 0
    run = load_run(ROOT / "results" / "fidelity-h200-g" / "run-0")
    first = run.cases[0]
    modes = {}
    for name, mode in first.modes.items():  # every mode of the first case-pass carries the moved reading
        check = mode.passes[0].canary
        after = check.after.model_copy(update={"graph_s_per_node": check.start.graph_s_per_node * 1.04})
        moved = mode.passes[0].model_copy(update={"canary": check.model_copy(update={"after": after})})
        modes[name] = mode.model_copy(update={"passes": [moved, *mode.passes[1:]]})
    write_run(tmp_path, run.with_case(first.model_copy(update={"modes": modes})))
    found = moves.summary(tmp_path)
    assert found["case_passes"] == 52  # the modes of one case-pass carry one reading
    assert found["past_bound"] == 1 and found["largest"] == pytest.approx(0.04)


def test_cli_timeline_stamps_every_line_in_order_and_ends_with_the_exit_code(scripts):
    timeline = importlib.import_module("cli_timeline")
    script = (
        "import sys, time; print('first'); time.sleep(0.2); print('second', file=sys.stderr); sys.exit(3)"
    )
    out = io.StringIO()
    assert timeline.main([sys.executable, "-c", script], out) == 3
    stamped = [line.split(maxsplit=1) for line in out.getvalue().splitlines()]
    assert [text for _, text in stamped] == ["first", "second", "exit 3"]
    seconds = [float(s) for s, _ in stamped]
    assert seconds == sorted(seconds) and seconds[1] - seconds[0] >= 0.15


def test_compare_speed_scales_each_copy_apart_when_asked():
    speed = _benchmark_module("compare_speed")
    run = load_run(ROOT / "results" / "quickstart-h200")
    big = speed.scaled(run, 20, distinct=True)
    first, third = (
        run.cases[0].samples("eager", "wall_s_per_iter"),
        big.cases[16].samples("eager", "wall_s_per_iter"),
    )
    assert big.cases[0].modes == run.cases[0].modes
    assert third == pytest.approx(first * (1 + 2 * speed.DISTINCT_STEP), rel=1e-12)
    assert big.cases[16].modes["eager"].pass_sizes == run.cases[0].modes["eager"].pass_sizes


def test_speed_tables_writes_a_run_of_n_distinct_cases_and_counts_its_fits(tmp_path, monkeypatch):
    """The tables of a run repeated to 16 distinct cases (two copies of its 8): every row written, and
    each write makes the fits of both copies afresh, none kept from the write before."""
    from launchbench.measure import levels

    run = load_run(ROOT / "results" / "quickstart-h200")
    made = []
    fit = levels._two_components
    monkeypatch.setattr(levels, "_two_components", lambda logs: made.append(1) or fit(logs))
    levels.forget_levels()
    run_table(run)
    levels.forget_levels()
    out = tmp_path / "tables.json"
    script = ROOT / "benchmarks" / "speed_tables.py"
    arguments = ["--cases", "16", "--distinct", "--repeat", "2", "--out", str(out)]
    subprocess.run(
        [sys.executable, str(script), str(ROOT / "results" / "quickstart-h200"), *arguments], check=True
    )
    summary = json.loads(out.read_text())
    assert made and summary["host_level_fits"] == 2 * len(made)
    assert summary["cases"] == 16 and summary["distinct"] is True and len(summary["wall_s"]) == 2
    assert summary["rows"] == 2 * sum(len(case.modes) for case in run.cases)


def test_time_split_adds_up_each_passes_samples_from_the_record_alone():
    """Throughput seconds: each pass's per-iteration wall samples times its iterations per sample;
    latency: its single-iteration samples; a cell per pass says T where the noise target was met."""
    split = _benchmark_module("time_split")
    run = load_run(ROOT / "results" / "quickstart-h200")
    found, lines = split.split(run)
    throughput = latency = 0.0
    for case in run.cases:
        for mode in case.modes.values():
            for one in mode.passes:
                throughput += sum(one.samples["wall_s_per_iter"]) * one.iters_per_sample
                latency += sum(one.samples.get("latency_s") or [])
    assert found.throughput_s == pytest.approx(throughput) and found.throughput_s > 0
    assert found.latency_s == pytest.approx(latency) and found.latency_s > 0
    assert found.case_passes == sum(case.passes_done for case in run.cases)
    assert found.cases_s > found.throughput_s + found.latency_s
    assert len(lines) == sum(len(case.modes) for case in run.cases)
    first = run.cases[0].modes["eager"].passes[0]
    cell = lines[0].split()[2]
    assert cell.startswith(
        ("T" if first.target_met else "-") + str(len(first.samples["wall_s_per_iter"])) + ":"
    )


def test_compare_trees_names_the_largest_difference_of_a_number_and_none_for_any_other():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from compare_trees import largest_difference

    base = b"case,ratio,verdict\nx,1.25,same\n"
    assert largest_difference({base}) == 0.0
    assert largest_difference({base, base.replace(b"1.25", b"1.2500000000125")}) == pytest.approx(1e-11)
    assert largest_difference({base, base.replace(b"same", b"slower")}) is None
    assert largest_difference({base, base + b"y,1.0,same\n"}) is None


@pytest.mark.parametrize("fmt", ["csv", "table"])
def test_compare_trees_alternates_the_trees_and_checks_their_outputs_agree(tmp_path, fmt):
    out = tmp_path / "trees.json"
    script = ROOT / "benchmarks" / "compare_trees.py"
    command = [sys.executable, str(script), str(ROOT), "--pairs", "1", "--cases", "2", "--out", str(out)]
    done = subprocess.run(
        command + (["--table"] if fmt == "table" else []), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(out.read_text())
    assert summary[f"{fmt}_identical"] is True and summary["old_tree"] == str(ROOT)
    assert summary["benchmark"].startswith(f"launchbench compare A B --format {fmt} -o FILE")
    assert summary["csv_largest_relative_difference"] == (0.0 if fmt == "csv" else None)
    assert [len(summary["timings"][side]) for side in ("old", "new")] == [1, 1]
    assert [line.split()[0] for line in done.stdout.splitlines()[:2]] == ["old", "new"]
    assert all(t["wall_s"] > 0 and t["peak_rss_kib"] > 0 for ts in summary["timings"].values() for t in ts)


def test_added_passes_study_runs_the_runner_s_rule_on_the_same_draws_as_the_old_one():
    """One level at 1% spread never asks; a row whose fifth pass sits alone far below the rest asks until
    the cap under the old rule and stops after the runner's APART_PASSES under the new one."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import numpy as np
    from added_passes_study import EXTRA_PASS_FACTOR, PLANNED, one_apart, one_level, one_row, until_cap

    from launchbench.run.extra_passes import APART_PASSES

    quiet = one_level(0.01, False)
    for rule in (until_cap, one_apart(APART_PASSES)):
        assert one_row(quiet, rule, np.random.default_rng(1))[0] == PLANNED

    def outlier_then_one_level():  # the fifth pass alone far below, every later one with the rest
        values = iter([6.0, 6.1, 6.05, 5.95, 4.4] + [6.0 + 0.02 * (i % 3) for i in range(20)])
        return lambda rng: next(values)

    passes, levels = one_row(outlier_then_one_level(), until_cap, np.random.default_rng(1))
    assert passes == EXTRA_PASS_FACTOR * PLANNED and levels.apart == (4,)
    passes, levels = one_row(outlier_then_one_level(), one_apart(APART_PASSES), np.random.default_rng(1))
    assert passes == PLANNED + APART_PASSES and levels.apart == (4,)


def test_run_trace_notes_a_runs_steps_in_order_from_the_interpreters_start(tmp_path):
    """benchmarks/run_trace.py on this tree: every traced step is noted, in the order the run takes them,
    and the last line names what the process imported."""
    trace = tmp_path / "trace.tsv"
    command = [sys.executable, str(ROOT / "benchmarks" / "run_trace.py"), str(trace), "run"]
    command += [
        str(ROOT / "tests" / "data" / "scripted" / "three.yaml"),
        "--backend",
        "tests.fakes:scripted_backend",
    ]
    command += ["--passes", "2", "--max-time", "0.1", "--out-dir", str(tmp_path / "run"), "-q"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=ROOT, timeout=120)
    events = [line.split("\t", 1) for line in trace.read_text().splitlines()]
    seconds, names = [float(t) for t, _ in events], [name for _, name in events]
    assert seconds == sorted(seconds)
    order = ["worker_context >", "spawn_first >", "make_console >", "runner.run >", "executor.start >"]
    order += ["next_pass >", "finish >", "main returned"]
    assert [names.index(step) for step in order] == sorted(names.index(step) for step in order)
    assert names.count("execute >") == names.count("execute <") > 0
    assert names[-1].startswith("atexit; imported:") and "sklearn" not in names[-1]


def test_speed_compare_times_the_table_when_asked_and_takes_its_steps(tmp_path):
    """``--table``: two runs of 16 cases compared with the table printed, timed once, the steps taken in a
    fresh process with the output step named the table's."""
    out = tmp_path / "compare.json"
    arguments = ["--cases", "16", "--repeat", "1", "--table", "--out", str(out)]
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "speed_compare.py"), *arguments], check=True)
    summary = json.loads(out.read_text())
    assert summary["cases"] == 16 and len(summary["wall_s"]) == len(summary["cpu_s"]) == 1
    assert "the table printed to a pipe" in summary["benchmark"]
    steps = summary["steps_cpu_s"]
    assert "the table" in steps and "the CSV" not in steps
    assert 0 < steps["reading"] < steps["in all, after the interpreter started"]


def _widened_run(source: Path, target: Path, eager: float, graph: float) -> None:
    """A copy of ``source``'s results.csv with each CI widened by its mode's factor (the low bound kept)."""
    import csv

    with source.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        factor = eager if row["mode"] == "eager" else graph
        for column in [c for c in row if c.endswith("_ci_low")]:
            high = column[: -len("_ci_low")] + "_ci_high"
            try:
                low, top = float(row[column]), float(row[high])
            except ValueError:
                continue
            row[high] = repr(low + factor * (top - low))
    target.mkdir(parents=True)
    with (target / "results.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_width_meta_pools_comparisons_and_finds_the_widening_each_mode_was_given(tmp_path):
    """Two comparisons packed as speed_device.sh packs them, the new runs' eager CIs 1.5 times as wide
    and the graph CIs as wide: each comparison and the pooled line read that, within the runs' scatter;
    two equal estimates pool to the same ratio with Cochran's Q at 0."""
    import tarfile

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        meta = importlib.import_module("width_meta")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    same = meta.LogRatio(0.1, 0.05)
    twice = meta.pooled([same, same])
    assert twice.ratio == pytest.approx(math.exp(0.1)) and twice.q == pytest.approx(0.0)
    assert math.log(twice.high / twice.ratio) == pytest.approx(1.96 * 0.05 / math.sqrt(2))
    source = ROOT / "results" / "quickstart-h200" / "results.csv"
    tarballs = []
    for call in range(2):
        folder = tmp_path / f"call-{call}" / "quickstart"
        for n, jitter in enumerate((0.97, 1.0, 1.03)):
            _widened_run(source, folder / f"old-{n}", jitter, jitter)
            _widened_run(source, folder / f"new-{n}", 1.5 * jitter, jitter * (1.01 if call else 0.99))
        tarballs.append(tmp_path / f"call-{call}.tar.gz")
        with tarfile.open(tarballs[-1], "w:gz") as archive:
            archive.add(folder, arcname="quickstart")
    out = tmp_path / "pooled.txt"
    meta.main([f"first={tarballs[0]}", f"second={tarballs[1]}", "--out", str(out)])
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# python benchmarks/width_meta.py first=")
    pooled = {line.split()[3]: float(line.split()[4]) for line in lines if line.startswith("pooled over 2:")}
    assert pooled["eager"] == pytest.approx(1.5, rel=0.01) and pooled["graph"] == pytest.approx(1.0, abs=0.02)
    assert sum("(3 old runs, 3 new)" in line for line in lines) == 6


def test_the_old_against_new_loop_reverses_the_sides_every_other_pair_and_takes_each_keys_median(capsys):
    """_report.alternate (worker_forks.py, plot_trees.py): old first, then new first, ...; every side's
    measurements in order and the median of each key; _report.old_tree_parser's OLD_TREE, --pairs, --out."""
    report = _benchmark_module("_report")
    calls: list[str] = []

    def measure(name: str, tree: Path) -> dict[str, float]:
        calls.append(name)
        return {"wall_s": float(len(calls)), "cpu_s": 10.0 * len(calls)}

    runs, medians = report.alternate({"old": ROOT / "a", "new": ROOT}, 3, measure)
    assert calls == ["old", "new", "new", "old", "old", "new"]
    assert [r["wall_s"] for r in runs["old"]] == [1.0, 4.0, 5.0]
    assert medians == {"old": {"wall_s": 4.0, "cpu_s": 40.0}, "new": {"wall_s": 3.0, "cpu_s": 30.0}}
    assert capsys.readouterr().out.splitlines()[-2:] == ["old: median wall_s 4.00, cpu_s 40.00",
                                                          "new: median wall_s 3.00, cpu_s 30.00"]  # fmt: skip
    args = report.old_tree_parser("First line.\nmore", pairs=4).parse_args(["old-tree", "--out", "x.json"])
    assert (args.old, args.pairs, args.out) == (Path("old-tree"), 4, Path("x.json"))
