"""Host levels: the rule on synthetic pass medians, the readers of where the launching thread ran (on
a fake /proc and /sys tree), their storage, the results.csv columns, the run summary, compare's note
and the passes the runner adds when a level holds too few passes."""

import dataclasses
import io
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from builders import make_run
from fakes import SLOW_FACTOR, SLOW_WORKERS_VARIABLE, STARTS_FILE_VARIABLE, levels_backend
from rich.console import Console

from launchbench.analysis.compare import compare_runs
from launchbench.analysis.host_levels import describe_levels, level_lines, metric_levels
from launchbench.analysis.table import run_table
from launchbench.measure.levels import ENOUGH_PASSES, Levels, find_levels, one_level
from launchbench.report.compare_console import level_notes, render_comparison
from launchbench.report.comparison_table import records
from launchbench.report.console import print_summary
from launchbench.report.markdown import comparison_markdown
from launchbench.report.run_files import write_tables
from launchbench.report.terminal import plain_console
from launchbench.results.level_splits import with_level_splits
from launchbench.results.metadata import Overrides
from launchbench.results.schema import WALL, CaseResult, HostData, ModePass, ModeResult, ThreadPlace
from launchbench.results.store import load_run, write_run
from launchbench.results.thread_place import cpu_mhz, current_cpu, pci_node, sysfs_pci_address, thread_place
from launchbench.run import runner
from launchbench.run.execute import host_data, pass_ended
from launchbench.run.extra_passes import APART_PASSES, capped_asks, extra_passes, pass_cap, row_asks

H200_PASSES = [4.43, 6.10, 6.43, 5.80, 6.35]  # one row's five pass medians on the H200 (µs)


# --- the rule ------------------------------------------------------------------------------------------


def test_two_clusters_are_two_levels_with_their_shares():
    values = [4.43, 6.10, 4.52, 6.43, 5.80, 4.61, 6.35, 6.2]
    levels = find_levels(values)
    assert levels.two and not levels.apart
    low, high = levels.levels
    assert low.passes == (0, 2, 5) and low.share == pytest.approx(3 / 8)
    assert high.passes == (1, 3, 4, 6, 7) and high.share == pytest.approx(5 / 8)
    assert low.center == pytest.approx(4.52) and (low.low, low.high) == (4.43, 4.61)
    assert high.center == pytest.approx(6.2)
    assert not levels.wants_passes  # each level holds at least ENOUGH_PASSES passes


def test_one_cluster_is_one_level():
    rng = np.random.default_rng(3)
    levels = find_levels(list(6.2 * np.exp(rng.normal(0, 0.02, 10))))
    assert levels.count == 1 and levels.levels[0].share == 1 and not levels.apart
    assert not levels.wants_passes


def test_a_single_outlying_pass_is_not_a_level_but_asks_for_more_passes():
    levels = find_levels(H200_PASSES)
    assert levels.count == 1
    assert levels.apart == (0,)  # the 4.43 µs pass
    assert levels.wants_passes
    more = find_levels([6.1, 6.0, 6.2, 4.43, 6.15, 6.05, 6.12, 5.98, 6.2, 6.1])
    assert more.count == 1 and more.apart == (3,)


def test_a_level_of_two_passes_asks_for_more_until_it_holds_enough():
    two_low = find_levels([4.5, 6.1, 4.55, 6.2, 6.15])
    assert two_low.two and min(level.count for level in two_low.levels) == 2 < ENOUGH_PASSES
    assert two_low.wants_passes
    assert not find_levels([4.5, 6.1, 4.55, 6.2, 6.15, 4.52]).wants_passes


def test_few_passes_or_a_small_spread_are_one_level_without_a_test():
    assert find_levels([4.4, 6.4, 6.3]).count == 1  # fewer than MIN_PASSES
    assert find_levels([6.0, 6.2, 6.1, 6.25, 6.05]).count == 1  # within 5% of each other
    assert find_levels([]).count == 0
    assert find_levels([5.0, 5.0, 7.0, 7.0, 7.0]).two  # identical passes fit (no zero variance)


def test_the_rule_is_deterministic():
    values = [4.43, 6.10, 4.9, 6.43, 5.80, 5.2, 6.35]
    first = find_levels(values)
    assert all(find_levels(list(values)) == first for _ in range(3))


def test_false_alarms_on_one_level_stay_rare():
    """Normal pass spreads of 5% (in log units) over 10 passes: two levels in under 5% of rows."""
    rng = np.random.default_rng(11)
    found = [find_levels(list(np.exp(rng.normal(0, 0.05, 10)))).two for _ in range(200)]
    assert np.mean(found) < 0.05


# --- where the thread ran ------------------------------------------------------------------------------


def fake_root(tmp_path: Path, cpu: int = 5, node: int = 1) -> Path:
    root = tmp_path / "root"
    stat = root / "proc" / "thread-self" / "stat"
    stat.parent.mkdir(parents=True)
    fields = ["0"] * 50
    fields[38] = str(cpu)  # field 39
    stat.write_text(f"123 (py thon (x)) {' '.join(fields[2:])}\n")
    cpu_dir = root / "sys" / "devices" / "system" / "cpu" / f"cpu{cpu}"
    (cpu_dir / "cpufreq").mkdir(parents=True)
    (cpu_dir / "cpufreq" / "scaling_cur_freq").write_text("2450000\n")
    (cpu_dir / "cpufreq" / "scaling_governor").write_text("performance\n")
    (cpu_dir / f"node{node}").mkdir()
    (cpu_dir / "topology").mkdir()
    (cpu_dir / "topology" / "thread_siblings_list").write_text(f"{cpu},{cpu + 64}\n")
    gpu = root / "sys" / "bus" / "pci" / "devices" / "0000:1b:00.0"
    gpu.mkdir(parents=True)
    (gpu / "numa_node").write_text("0\n")
    return root


def test_the_readers_read_a_fake_tree(tmp_path):
    root = fake_root(tmp_path)
    assert current_cpu(root) == 5
    assert thread_place(root) == ThreadPlace(
        cpu=5, mhz=2450.0, governor="performance", node=1, siblings="5,69"
    )
    assert pci_node("00000000:1B:00.0", root) == 0  # NVML's 8-digit domain, upper case
    assert sysfs_pci_address("0000:1B:00.0") == "0000:1b:00.0"


def test_the_frequency_falls_back_to_cpuinfo_and_what_is_missing_is_none(tmp_path):
    root = fake_root(tmp_path, cpu=2)
    (root / "sys" / "devices" / "system" / "cpu" / "cpu2" / "cpufreq" / "scaling_cur_freq").unlink()
    (root / "proc" / "cpuinfo").write_text(
        "processor\t: 0\ncpu MHz\t\t: 1000.0\n\nprocessor\t: 2\ncpu MHz\t\t: 3100.5\n"
    )
    assert cpu_mhz(2, root) == 3100.5
    empty = tmp_path / "empty"
    empty.mkdir()
    assert thread_place(empty) == ThreadPlace()
    assert pci_node("0000:1b:00.0", empty) is None and pci_node("not a bus id", root) is None
    assert pci_node(None, root) is None
    (root / "sys" / "bus" / "pci" / "devices" / "0000:1b:00.0" / "numa_node").write_text("-1\n")
    assert pci_node("0000:1b:00.0", root) is None  # no node


def test_host_data_records_the_start_the_end_and_the_gpu_node(tmp_path):
    root = fake_root(tmp_path, cpu=7, node=0)
    host = host_data("0000:1b:00.0", root)
    assert host.pid == os.getpid() and host.start.cpu == 7 and host.gpu_node == 0 and host.end is None
    ended = pass_ended(host, fake_root(tmp_path / "later", cpu=9, node=1))
    assert ended.start.cpu == 7 and ended.end.cpu == 9 and ended.end.node == 1


@pytest.mark.skipif(not Path("/proc/thread-self/stat").exists(), reason="needs Linux's /proc")
def test_host_data_reads_this_thread_on_linux():
    cpu = host_data().start.cpu
    assert cpu is not None and cpu in os.sched_getaffinity(0)


# --- storage, table, summary -----------------------------------------------------------------------


def leveled_case(values_us: list[float], case: CaseResult, places: bool = True) -> CaseResult:
    """The case with its eager mode's passes at these wall medians (µs per launch), each pass with
    host data saying which CPU it ran on (CPU 40 + pass for the slow ones)."""
    eager = case.modes["eager"]
    n = case.launches_per_iter
    passes = []
    for i, value in enumerate(values_us):
        per_iter = value * 1e-6 * n
        one = eager.passes[i % len(eager.passes)]
        slow = value > 5.2
        host = HostData(
            pid=100 + i,
            start=ThreadPlace(cpu=40 + i if slow else i, mhz=2000.0 if slow else 3000.0, node=int(slow)),
            end=ThreadPlace(cpu=40 + i if slow else i),
            gpu_node=0,
        )
        samples = {key: [per_iter * (1 + 0.001 * (k - 2)) for k in range(5)] for key in one.samples}
        passes.append(ModePass(iters_per_sample=1, samples=samples, host=host if places else HostData()))
    modes = {**case.modes, "eager": ModeResult(mode="eager", status="ok", passes=passes)}
    return case.model_copy(update={"modes": modes, "passes_done": len(values_us)})


def two_level_run(values: list[float] | None = None):
    run = make_run(passes=5)
    first = run.cases[0]
    return run.with_case(leveled_case(values or [4.43, 6.10, 4.52, 6.43, 6.35], first)), first.case_id


def test_host_places_and_extra_passes_round_trip_through_results_json(tmp_path):
    run, case_id = two_level_run()
    case = run.case("quickstart", case_id).model_copy(update={"extra_passes": 2, "passes_done": 5})
    run = run.with_case(case)
    write_run(tmp_path, run)
    back = load_run(tmp_path)
    assert back.case("quickstart", case_id) == with_level_splits(run).case("quickstart", case_id)
    kept = back.case("quickstart", case_id).modes["eager"].levels["wall_s_per_iter"]
    assert len(kept.levels) == 2  # the two host levels, kept so that readers need not fit again
    assert back.case("quickstart", case_id).modes["eager"].passes[1].host.start.cpu == 41
    text = (tmp_path / "results.json").read_text()
    other = run.cases[1]
    assert other.extra_passes == 0 and '"extra_passes": 0' not in text  # absent where nothing was added


def test_golden_v4_files_read_without_the_new_fields():
    golden = load_run(Path(__file__).parents[1] / "data" / "golden" / "results-v4.json")
    for case in golden.cases:
        assert case.extra_passes == 0
        for mode in case.modes.values():
            assert all(p.host.start is None and p.host.gpu_node is None for p in mode.passes)


def test_results_csv_reports_both_levels_and_their_shares(tmp_path):
    run, case_id = two_level_run()
    table = run_table(run).set_index(["case", "mode"])
    row = table.loc[(case_id, "eager")]
    assert row["wall_us_per_launch_levels"] == 2
    assert row["wall_us_per_launch_level_low"] == pytest.approx(4.475, rel=1e-2)
    assert row["wall_us_per_launch_level_low_share"] == pytest.approx(0.4)
    assert row["wall_us_per_launch_level_high"] == pytest.approx(6.35, rel=1e-2)
    assert row["wall_us_per_launch_level_high_share"] == pytest.approx(0.6)
    graph = table.loc[(case_id, "graph")]
    assert graph["wall_us_per_launch_levels"] == 1 and pd.isna(graph["wall_us_per_launch_level_low"])
    write_tables(tmp_path, run)
    csv = pd.read_csv(tmp_path / "results.csv")
    assert "wall_us_per_launch_level_high_share" in csv.columns and "extra_passes" in csv.columns


def test_the_summary_names_both_levels_and_what_the_thread_ran_on(tmp_path):
    run, case_id = two_level_run()
    out = io.StringIO()
    print_summary(plain_console(out), run, tmp_path)
    text = out.getvalue()
    assert "host levels" in text
    line = next(
        line for line in text.splitlines() if case_id in line and "[eager] wall_us_per_launch" in line
    )
    assert "two levels: 4.47 µs (2 of 5 passes, 4.43–4.52) and 6.35 µs (3 of 5 passes, 6.1–6.43)" in line
    assert "low: CPU 0, 2 node 0 3000 MHz GPU node 0; high: CPU 41, 43, 44 node 1 2000 MHz" in line
    assert "also at two levels: cpu_us_per_launch, latency_us" in line
    apart_run = two_level_run([6.1, 6.0, 6.2, 4.43, 6.15])[0]
    levels = metric_levels(apart_run.cases[0], "eager", "wall_us_per_launch")
    assert describe_levels(levels) == "one level; 1 of 5 passes sit apart (passes 4)"
    lines = level_lines(apart_run)
    assert not any(apart_run.cases[0].case_id + " [eager]" in line for line in lines)
    assert "row-metric(s) with passes apart from their one level" in lines[-1]


# --- compare ---------------------------------------------------------------------------------------


def test_compare_notes_levels_mixed_differently():
    baseline, case_id = two_level_run([4.43, 6.10, 4.52, 6.43, 6.35])
    current, _ = two_level_run([6.2, 6.10, 6.3, 6.43, 6.35])
    comparison = compare_runs(baseline, current)
    row = next(r for r in comparison.rows if r.key == ("quickstart", case_id, "eager"))
    note = row.metric("wall_us_per_launch").levels
    assert note.startswith("baseline two levels: 4.47 µs (2 of 5 passes")
    assert "current one level" in note and "the verdict may reflect level shares" in note
    other = next(r for r in comparison.rows if r.key[1] != case_id and r.mode == "graph")
    assert not other.metric("wall_us_per_launch").levels  # GPU-bound: its passes agree within 0.2%
    out = io.StringIO()
    render_comparison(plain_console(out), comparison, None)
    text = out.getvalue()
    assert "Host levels (" in text
    notes = level_notes(comparison)
    assert notes and all(f"  {n}" in text.splitlines() for n in notes)  # whole lines in a log
    narrow = io.StringIO()  # on a terminal, rich wraps them at its width
    render_comparison(
        Console(file=narrow, width=60, force_terminal=True, color_system=None), comparison, None
    )
    assert all(len(line) <= 60 for line in narrow.getvalue().splitlines())
    assert "the verdict may reflect level shares" in " ".join(narrow.getvalue().split())
    assert "### Host levels" in comparison_markdown(comparison)
    record = next(r for r in records(comparison) if (r["case"], r["mode"]) == (case_id, "eager"))
    assert record["levels"] == note
    line = next(line for line in text.splitlines() if f"{case_id} [eager] wall_us_per_launch:" in line)
    assert "may reflect level shares" in line
    assert line.endswith("(also wall_us_per_iter, cpu_us_per_launch, gpu_us_per_iter, latency_us)")


def test_compare_of_two_sides_at_the_same_levels_says_so_without_the_warning():
    baseline, case_id = two_level_run([4.43, 6.10, 4.52, 6.43, 6.35])
    current, _ = two_level_run([4.45, 6.12, 4.50, 6.40, 6.30])
    row = next(r for r in compare_runs(baseline, current).rows if r.key == ("quickstart", case_id, "eager"))
    note = row.metric("wall_us_per_launch").levels
    assert "baseline two levels" in note and "current two levels" in note
    assert "may reflect" not in note


# --- passes added ------------------------------------------------------------------------------------


def _planned_case():
    plan = runner.plan(
        [Path(__file__).parents[1] / "data" / "scripted" / "three.yaml"], overrides=Overrides(passes=5)
    )
    case = plan.cases[0]
    run = make_run(passes=5)
    result = run.cases[0].model_copy(update={"scenario": case.scenario, "case_id": case.case_id})
    return case, run, result


def test_extra_passes_stop_at_the_cap():
    """A row at two levels, one of them in 2 passes, asks round after round up to twice the planned passes."""
    case, run, result = _planned_case()
    short = leveled_case([6.1, 6.0, 4.4, 6.2, 4.45, 6.15, 6.05, 6.12, 5.98], result)
    [(asked, index, why)] = extra_passes([case], run.model_copy(update={"cases": [short]}))
    assert asked is case and index == 9 and "two levels, one in 2 of 9 passes" in why
    full = leveled_case([6.1, 6.0, 4.4, 6.2, 4.45, 6.15, 6.05, 6.12, 5.98, 6.1], result)
    assert pass_cap(case) == 10 and extra_passes([case], run.model_copy(update={"cases": [full]})) == []
    settled = leveled_case([6.1, 6.0, 6.2, 6.15, 6.05], result)
    assert extra_passes([case], run.model_copy(update={"cases": [settled]})) == []


def test_a_scenario_s_added_passes_caps_the_passes_added():
    """``measure.added_passes`` bounds the passes added beyond the planned ones (0: none at all)."""
    case, run, result = _planned_case()
    two_short = leveled_case([6.1, 6.0, 4.4, 6.2, 4.45], result)
    record = run.model_copy(update={"cases": [two_short]})
    one = dataclasses.replace(case, measure=case.measure.model_copy(update={"added_passes": 1}))
    none = dataclasses.replace(case, measure=case.measure.model_copy(update={"added_passes": 0}))
    assert pass_cap(one) == 6 and pass_cap(none) == 5
    [(asked, index, _)] = extra_passes([one], record)
    assert asked is one and index == 5
    assert extra_passes([none], record) == []
    [(capped, why)] = capped_asks([none], record)  # the run says the row asked and got none
    assert capped is none and "two levels, one in 2 of 5 passes" in why
    assert capped_asks([one], record) == []  # below its cap: a pass is added instead
    once = leveled_case([6.1, 6.0, 4.4, 6.2, 4.45, 6.15], result)  # still one level short, but at the cap
    assert extra_passes([one], run.model_copy(update={"cases": [once]})) == []
    [(capped, _)] = capped_asks([one], run.model_copy(update={"cases": [once]}))
    assert capped is one
    settled = leveled_case([6.1, 6.0, 6.2, 6.15, 6.05], result)
    assert capped_asks([none], run.model_copy(update={"cases": [settled]})) == []


def test_a_single_pass_apart_asks_for_apart_passes_more_and_then_stops():
    """One pass apart asks for APART_PASSES added passes; when none of them joins it, the row stops
    asking (it stays reported as a pass apart); a second pass joining it asks on, up to the cap."""
    case, run, result = _planned_case()

    def asked(values):
        return extra_passes([case], run.model_copy(update={"cases": [leveled_case(values, result)]}))

    assert APART_PASSES == 2
    [(_, index, why)] = asked([6.1, 6.0, 6.2, 4.43, 6.15])
    assert index == 5 and "1 of 5 passes sit apart" in why
    [(_, index, _)] = asked([6.1, 6.0, 6.2, 4.43, 6.15, 6.05])
    assert index == 6
    assert asked([6.1, 6.0, 6.2, 4.43, 6.15, 6.05, 6.12]) == []  # two added, the pass apart still alone
    [(_, index, why)] = asked([6.1, 6.0, 6.2, 4.43, 6.15, 6.05, 4.5])  # joined: two levels, one in 2
    assert index == 7 and "one in 2 of 7 passes" in why


def test_row_asks_follows_the_levels_and_the_added_passes():
    one_apart = Levels(one_level([6.0, 6.1, 4.4]).levels, apart=(2,))
    assert row_asks(one_apart, 0) and row_asks(one_apart, 1) and not row_asks(one_apart, 2)
    assert row_asks(one_apart, 3, apart_passes=4)
    two_apart = Levels(one_level([6.0, 6.1, 4.4, 4.5]).levels, apart=(2, 3))
    assert row_asks(two_apart, 9)
    assert not row_asks(one_level([6.0, 6.1, 6.05]), 0)


ONE_CASE = """name: one
description: One chain for the passes added for host levels.
measure: {max_time: 0.5, min_samples: 5, target_noise: 0.02, warmup_time: 0.01, passes: 5}
chains:
  empty: [{kind: empty, repeat: 10}]
"""


def test_a_level_with_too_few_passes_gets_fresh_worker_passes(tmp_path, monkeypatch):
    """One worker process in two is slow: five planned passes hold the slow level twice (passes 2, 4),
    so the runner adds a sixth pass in a fresh worker (slow again), and then stops: 3 and 3."""
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    monkeypatch.delenv(SLOW_WORKERS_VARIABLE, raising=False)
    scenario = tmp_path / "one.yaml"
    scenario.write_text(ONE_CASE)
    notes = []

    class Notes(runner.SilentEvents):
        def note(self, message):
            notes.append(message)

    options = runner.RunOptions(isolate=True, backend_factory=levels_backend, write_tables=write_tables)
    record = runner.run(runner.plan([scenario]), tmp_path / "run", options, Notes())
    case = record.cases[0]
    assert case.passes_done == 6 and case.extra_passes == 1
    assert len(set(starts.read_text().split())) == 6  # every pass in its own worker process
    levels = metric_levels(case, "eager", "wall_us_per_launch")
    assert levels.two and [level.count for level in levels.levels] == [3, 3]
    assert levels.levels[1].center / levels.levels[0].center == pytest.approx(SLOW_FACTOR, rel=0.05)
    assert len(notes) == 1 and "adding pass 6 (at most 10)" in notes[0]
    back = load_run(tmp_path / "run")  # from results.json and from the journal alike
    assert back.cases[0].extra_passes == 1
    (tmp_path / "run" / "results.json").unlink()
    assert load_run(tmp_path / "run").cases[0].extra_passes == 1
    table = pd.read_csv(tmp_path / "run" / "results.csv")
    assert table["extra_passes"].tolist() == [1, 1] and table["passes"].tolist() == [6, 6]


def test_a_case_at_its_cap_is_noted_and_gets_no_pass(tmp_path, monkeypatch):
    """With ``added_passes: 0`` the slow level in 2 of 5 passes gets no pass, and the run says so."""
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(tmp_path / "starts.txt"))
    monkeypatch.delenv(SLOW_WORKERS_VARIABLE, raising=False)
    scenario = tmp_path / "one.yaml"
    scenario.write_text(ONE_CASE.replace("passes: 5}", "passes: 5, added_passes: 0}"))
    notes = []

    class Notes(runner.SilentEvents):
        def note(self, message):
            notes.append(message)

    options = runner.RunOptions(isolate=True, backend_factory=levels_backend)
    record = runner.run(runner.plan([scenario]), tmp_path / "run", options, Notes())
    assert record.cases[0].passes_done == 5 and record.cases[0].extra_passes == 0
    [note] = notes
    assert "one in 2 of 5 passes (want 3); no pass added: at its cap of 5 passes" in note


def test_one_level_gets_no_added_pass(tmp_path, monkeypatch):
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    monkeypatch.setenv(SLOW_WORKERS_VARIABLE, "99")  # no slow worker
    scenario = tmp_path / "one.yaml"
    scenario.write_text(ONE_CASE)
    options = runner.RunOptions(isolate=True, backend_factory=levels_backend)
    record = runner.run(runner.plan([scenario]), tmp_path / "run", options)
    assert record.cases[0].passes_done == 5 and record.cases[0].extra_passes == 0
    wall = record.cases[0].modes["eager"].pass_medians(WALL)
    assert max(wall) / min(wall) < 1.05
