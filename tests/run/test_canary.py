"""The canary: every worker reads its backend's fixed reference at its start and after each case; a case
after which the graph reading moved beyond its bound is marked disturbed, its worker replaced, the run exits
1 and says so (scripted backend: a case put in on purpose makes the reference 35% slower)."""

from pathlib import Path

import pandas as pd
import pytest
from fakes import CANARY_DISTURB_VARIABLE, STARTS_FILE_VARIABLE, counting_backend, scripted_backend

from launchbench.report.console import canary_line
from launchbench.report.run_files import write_tables
from launchbench.results.metadata import Overrides
from launchbench.results.schema import CanaryReading, CaseResult, ModePass, ModeResult
from launchbench.results.store import load_run
from launchbench.run import runner
from launchbench.run.canary import CanaryBounds, CanaryWatch, with_canary

DATA = Path(__file__).parents[1] / "data" / "scripted"


def reading(graph_us: float, eager_us: float = 5.0) -> CanaryReading:
    return CanaryReading(graph_s_per_node=graph_us * 1e-6, eager_s_per_launch=eager_us * 1e-6)


def test_the_watch_compares_each_reading_with_the_workers_start():
    watch = CanaryWatch(reading(0.50))
    first = watch.check(reading(0.51))  # +2%: within 3%
    second = watch.check(reading(0.52, eager_us=7.0))  # +4%: disturbed; eager moving bounds nothing
    assert first is not None and not first.disturbed and first.before == reading(0.50)
    assert second is not None and second.disturbed and second.before == reading(0.51)
    assert second.start == reading(0.50) and second.graph_shift == pytest.approx(0.04)
    assert not CanaryBounds().disturbed(reading(0.5, 4.4), reading(0.5, 6.4))
    assert CanaryWatch(None).check(reading(0.5)) is None  # a backend without a reference


def test_the_check_lands_on_every_mode_pass_of_the_result():
    passes = [ModePass(iters_per_sample=1, samples={"wall_s_per_iter": [1e-6]})]
    result = CaseResult(
        scenario="s", case_id="c", chain="c", kinds="empty", launches_per_iter=1,
        modes={m: ModeResult(mode=m, status="ok", passes=passes) for m in ("eager", "graph")},
    )  # fmt: skip
    check = CanaryWatch(reading(0.5)).check(reading(0.7))
    marked = with_canary(result, check)
    assert all(m.passes[0].canary == check for m in marked.modes.values())
    assert marked.disturbed_passes == 1 and result.disturbed_passes == 0
    assert with_canary(result, None) is result


@pytest.fixture(scope="module")
def disturbed_run(tmp_path_factory):
    """three.yaml in worker processes, 2 passes, the case scale/length=1 disturbing its worker."""
    tmp = tmp_path_factory.mktemp("canary")
    starts = tmp / "starts.txt"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STARTS_FILE_VARIABLE, str(starts))
        patch.setenv(CANARY_DISTURB_VARIABLE, "scale/length=1")
        plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2))
        options = runner.RunOptions(isolate=True, backend_factory=counting_backend, write_tables=write_tables)
        record = runner.run(plan, tmp / "run", options)
    return tmp / "run", record, len(starts.read_text().split())


def test_a_disturbing_case_is_marked_and_its_worker_replaced(disturbed_run):
    run_dir, record, workers = disturbed_run
    by_id = {c.case_id: c for c in load_run(run_dir).cases}
    assert by_id["scale/length=1"].disturbed_passes == 2  # marked in both passes
    assert all(by_id[i].disturbed_passes == 0 for i in by_id if i != "scale/length=1")
    assert workers == 2 * 2  # each pass: a fresh worker, and another after the disturbed case
    later = by_id["scale/length=10"].modes["graph"].passes[0].canary
    assert later is not None and later.start.graph_s_per_node == pytest.approx(0.5e-6)  # a fresh worker
    table = pd.read_csv(run_dir / "results.csv")
    rows = table[table["case"] == "scale/length=1"]
    assert (rows["disturbed_passes"] == 2).all() and (rows["canary_graph_shift_pct"] > 30).all()
    assert (table[table["case"] == "empty/length=1"]["disturbed_passes"] == 0).all()
    line = canary_line(record)
    assert line is not None and "disturbed" in line and "scale/length=1" in line and "+35.0%" in line


def test_a_clean_run_reads_its_canary_in_the_summary(tmp_path):
    plan = runner.plan([DATA / "three.yaml"])
    options = runner.RunOptions(isolate=False, backend_factory=scripted_backend, write_tables=write_tables)
    record = runner.run(plan, tmp_path / "run", options)
    line = canary_line(record)
    assert (
        line == "canary: graph 0.500 → 0.500 µs/node (largest move +0.0% over 25 case-passes)"
    )  # 5 cases x 5 passes
    assert pd.read_csv(tmp_path / "run" / "results.csv")["disturbed_passes"].dropna().eq(0).all()


def _invoke(*args: str):
    from click.testing import CliRunner

    from launchbench.cli import cli

    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """three.yaml in worker processes, 2 passes, nothing disturbed: the baseline of the gate tests."""
    run_dir = tmp_path_factory.mktemp("clean") / "run"
    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2))
    options = runner.RunOptions(isolate=True, backend_factory=scripted_backend, write_tables=write_tables)
    runner.run(plan, run_dir, options)
    return run_dir


def test_compare_does_not_pass_a_gate_on_a_disturbed_row(clean_run, disturbed_run, tmp_path):
    current = disturbed_run[0]
    gate = ["--fail-on", "wall_us_per_iter:50%", "--allow-blind", "--junit", str(tmp_path / "g.xml")]
    failing = _invoke("compare", str(clean_run), str(current), *gate, "--format", "markdown")
    assert failing.exit_code == 1
    assert "FAIL: 2 rows measured in a disturbed state" in failing.output  # eager and graph of one case
    assert (
        "### Measured in a disturbed state" in failing.output and "scale/length=1 [graph]" in failing.output
    )
    junit = (tmp_path / "g.xml").read_text()
    assert 'type="disturbed"' in junit and "scale/length=1 [eager] disturbed" in junit
    allowed = _invoke("compare", str(clean_run), str(current), *gate, "--allow-disturbed")
    assert allowed.exit_code == 0, allowed.output
    assert (
        "measured in a disturbed state" in allowed.output and "allowed by --allow-disturbed" in allowed.output
    )
    clean = _invoke("compare", str(clean_run), str(clean_run), *gate)
    assert clean.exit_code == 0 and "disturbed" not in clean.output


def test_check_does_not_pass_an_expectation_on_a_disturbed_row(disturbed_run, tmp_path):
    scenario = tmp_path / "three.yaml"
    text = (DATA / "three.yaml").read_text()
    scenario.write_text(
        text + "expect:\n  - {case: 'scale/length=1', mode: graph, metric: wall_us_per_launch, max: 1000}\n"
        "  - {case: 'empty/length=1', mode: graph, metric: wall_us_per_launch, max: 1000}\n"
    )
    checked = _invoke("check", str(disturbed_run[0]), "-s", str(scenario))
    assert checked.exit_code == 1
    assert "FAIL: 1 row measured in a disturbed state" in checked.output
    assert "scale/length=1 [graph]" in checked.output and "--allow-disturbed" in checked.output
    allowed = _invoke("check", str(disturbed_run[0]), "-s", str(scenario), "--allow-disturbed")
    assert allowed.exit_code == 0, allowed.output
