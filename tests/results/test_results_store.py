import json
from pathlib import Path

import pytest
from builders import make_run

from launchbench.analysis.columns import COLUMNS
from launchbench.analysis.table import run_table
from launchbench.errors import ResultsFileError
from launchbench.report.run_files import write_run_files as write_run
from launchbench.results.schema import SAMPLE_KEYS, SCHEMA_VERSION
from launchbench.results.store import JOURNAL, RunJournal, create_run_dir, load_run

ROOT = Path(__file__).parents[2]


def test_round_trip(tmp_path):
    run = make_run()
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", run)
    back = load_run(tmp_path / "r")
    assert back == run
    assert load_run(tmp_path / "r" / "results.csv") == run


def test_csv_has_every_documented_column_and_graph_only_columns_empty_for_eager(tmp_path):
    table = run_table(make_run())
    assert list(table.columns) == list(COLUMNS)
    eager = table[table["mode"] == "eager"]
    assert eager["capture_us"].isna().all() and eager["speedup"].isna().all()
    assert table[table["mode"] == "graph"]["capture_us"].notna().all()


def test_newer_schema_and_other_tools_are_refused(tmp_path):
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", make_run())
    data = json.loads((tmp_path / "r" / "results.json").read_text())
    data["schema_version"] = SCHEMA_VERSION + 1
    (tmp_path / "r" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match="newer"):
        load_run(tmp_path / "r")
    data["tool"] = "pyperf"
    (tmp_path / "r" / "results.json").write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match="not launchbench"):
        load_run(tmp_path / "r")


def test_truncated_file_is_refused(tmp_path):
    create_run_dir(tmp_path / "r")
    write_run(tmp_path / "r", make_run())
    path = tmp_path / "r" / "results.json"
    path.write_text(path.read_text()[:500])
    with pytest.raises(ResultsFileError, match="truncated or corrupt"):
        load_run(path)


def test_writes_leave_no_temporary_files(tmp_path):
    create_run_dir(tmp_path / "r")  # claimed by creating its (empty) journal
    write_run(tmp_path / "r", make_run())
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        "costmodel.csv",
        "results.csv",
        "results.journal.jsonl",
        "results.json",
    ]


# --- schema versions: golden files ------------------------------------------------------------------

GOLDEN = ROOT / "tests" / "data" / "golden"


def test_v1_golden_file_migrates_to_passes():
    raw = json.loads((GOLDEN / "results-v1.json").read_text())
    run = load_run(GOLDEN / "results-v1.json")
    assert raw["schema_version"] == 1 and run.schema_version == SCHEMA_VERSION
    for raw_case, case in zip(raw["cases"], run.cases, strict=True):
        for name, raw_mode in raw_case["modes"].items():
            mode = case.modes[name]
            assert mode.pass_sizes == raw_mode["pass_sizes"]
            assert len(mode.passes) == len(raw_mode["pass_sizes"]) == case.passes_done == 5
            assert mode.samples == {k: v for k, v in raw_mode["samples"].items() if v}
            assert mode.iters_per_sample == raw_mode["iters_per_sample"]
            assert mode.throttled_samples == raw_mode["throttled_samples"]
            assert mode.target_met == raw_mode["target_met"]
            if raw_mode["lifecycle_passes"]:
                v1_fields = {"exclude": {"instantiate_upload_s", "instantiate_then_upload_s"}}  # v4 added
                lifecycles = [p.lifecycle.model_dump(**v1_fields) for p in mode.passes]
                assert lifecycles == raw_mode["lifecycle_passes"]
                assert mode.lifecycle.model_dump(**v1_fields) == raw_mode["lifecycle"]
                assert mode.lifecycle.instantiate_upload_s is None


def test_v2_golden_file_reads_back_as_v6_with_only_the_version_changed():
    text = (GOLDEN / "results-v2.json").read_text()
    run = load_run(GOLDEN / "results-v2.json")
    assert json.loads(text)["schema_version"] == 2 and run.schema_version == SCHEMA_VERSION == 6
    assert json.loads(run.model_dump_json()) == {**json.loads(text), "schema_version": 6}
    one = run.cases[0].modes["eager"].passes[0]
    assert one.clocks.sm_mhz and one.host.pid is not None and one.host.load_1m is not None
    assert all(case.shapes is None and all(p.shapes is None for m in case.modes.values() for p in m.passes)
               for case in run.cases)  # fmt: skip


def test_v3_golden_file_reads_back_as_v6_with_its_shape_counts():
    text = (GOLDEN / "results-v3.json").read_text()
    run = load_run(GOLDEN / "results-v3.json")
    assert json.loads(run.model_dump_json()) == {**json.loads(text), "schema_version": 6}
    mlp, refused = run.cases
    assert mlp.shapes is not None and mlp.shapes.values == [8, 16, 32, 64] and mlp.shapes.per_shape == 1
    assert set(mlp.modes) == {"eager", "recapture", "cache", "update"}
    update = mlp.modes["update"].shape_counts
    assert update is not None and update.updates == update.changes > 0 and update.update_refusals == 0
    assert len(mlp.modes["update"].passes) == 2  # counts summed over both passes
    assert update.changes == sum(p.shapes.changes for p in mlp.modes["update"].passes)
    refusals = refused.modes["update"].shape_counts
    assert refusals.update_refusals == refusals.recaptures == refusals.changes > 0
    assert refusals.refusal_reasons == {"cudaGraphExecUpdateErrorTopologyChanged": refusals.changes}


def test_v4_golden_file_reads_back_as_v6_with_only_the_version_changed():
    text = (GOLDEN / "results-v4.json").read_text()
    run = load_run(GOLDEN / "results-v4.json")
    assert json.loads(run.model_dump_json()) == {**json.loads(text), "schema_version": 6}
    assert all(p.canary is None for case in run.cases for m in case.modes.values() for p in m.passes)
    graph = run.cases[0].modes["graph"]
    assert graph.lifecycle.instantiate_upload_s > 0 and graph.lifecycle.instantiate_then_upload_s > 0
    assert [r.rank for r in graph.passes[0].ranks] == [0, 1]


def test_v5_golden_file_reads_back_as_v6_with_its_canary():
    text = (GOLDEN / "results-v5.json").read_text()
    run = load_run(GOLDEN / "results-v5.json")
    assert json.loads(run.model_dump_json()) == {**json.loads(text), "schema_version": 6}
    first, second = run.cases[:2]
    check = first.modes["graph"].passes[0].canary
    assert check is not None and not check.disturbed and abs(check.graph_shift) < 0.03
    assert second.disturbed_passes == 1 and second.modes["eager"].disturbed_passes == 1
    assert second.modes["graph"].passes[1].canary.graph_shift > 0.3


def test_v6_golden_file_reads_back_to_the_same_json_with_its_kept_splits(tmp_path):
    text = (GOLDEN / "results-v6.json").read_text()
    run = load_run(GOLDEN / "results-v6.json")
    assert json.loads(run.model_dump_json()) == json.loads(text)
    eager, graph = run.cases[0].modes["eager"], run.cases[0].modes["graph"]
    assert set(eager.levels) == set(SAMPLE_KEYS) and not graph.levels
    assert all(split.levels == [[0, 1, 3], [2, 4, 5]] and not split.apart for split in eager.levels.values())
    write_run(tmp_path / "again", run)  # writing it again keeps the same splits
    assert load_run(tmp_path / "again").cases[0].modes["eager"].levels == eager.levels


def test_rank_series_must_match_the_pass(tmp_path):
    data = json.loads((GOLDEN / "results-v4.json").read_text())
    data["cases"][0]["modes"]["eager"]["passes"][0]["ranks"][1]["samples"]["wall_s_per_iter"].pop()
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResultsFileError, match=r"ranks\[1\].samples.wall_s_per_iter.*holds"):
        load_run(path)


@pytest.mark.parametrize("run_dir", sorted(p.parent.name for p in (ROOT / "results").glob("*/results.json")))
def test_committed_runs_still_load(run_dir):
    run = load_run(ROOT / "results" / run_dir)
    assert run.cases and all(
        m.passes for c in run.cases for m in c.modes.values() if m.status in ("ok", "budget")
    )


# --- the journal ---------------------------------------------------------------------------------------


def _header(tmp_path):
    run = make_run(passes=2)
    first = run.model_copy(update={"cases": [], "status": "running", "finished": None})
    return run, first


def _modes(run):
    return [(c.case_id, c.passes_done, c.modes) for c in run.cases]


def _one_pass(case, index):
    modes = {n: m.model_copy(update={"passes": m.passes[index : index + 1]}) for n, m in case.modes.items()}
    return case.model_copy(update={"modes": modes, "passes_done": 1})


def test_journal_replays_a_crashed_run_and_results_json_is_written_only_when_compacted(tmp_path):
    run, first = _header(tmp_path)
    run_dir = create_run_dir(tmp_path / "r")
    journal = RunJournal(run_dir)
    journal.start(first)
    started = (run_dir / "results.json").read_bytes()
    for index in range(2):
        for case in run.cases:
            journal.append(_one_pass(case, index), index)
    assert (run_dir / "results.json").read_bytes() == started  # not rewritten per case
    crashed = load_run(run_dir)  # results.json holds less than the journal: replayed
    assert crashed.status == "running" and _modes(crashed) == _modes(run)
    (run_dir / "results.json").unlink()
    assert _modes(load_run(run_dir)) == _modes(run)
    with (run_dir / JOURNAL).open("a") as handle:
        handle.write('{"record": "pass", "pass": 2, "case": {"scen')  # a line cut short by the crash
    assert _modes(load_run(run_dir)) == _modes(run)
    journal.compact(crashed.model_copy(update={"status": "interrupted", "finished": "now"}))
    back = load_run(run_dir)
    assert back.status == "interrupted" and _modes(back) == _modes(run)
    compacted = json.loads((run_dir / "results.json").read_text())
    assert (
        compacted["journal_bytes"] == (run_dir / JOURNAL).stat().st_size
    )  # what results.json holds of the journal


def test_journal_cost_per_case_does_not_grow_with_the_number_of_cases(tmp_path):
    """Bytes written per case-pass (journal and results.json together), for a 4-case and a 40-case run."""
    run, first = _header(tmp_path)
    case = run.cases[0]

    def per_case_bytes(n: int) -> list[int]:
        run_dir = create_run_dir(tmp_path / f"r{n}")
        journal = RunJournal(run_dir)
        journal.start(first)
        costs = []
        compacted = (run_dir / "results.json").stat()
        for i in range(n):
            before = journal.bytes_written
            journal.append(_one_pass(case.model_copy(update={"case_id": f"c{i:04d}"}), 0), 0)
            costs.append(journal.bytes_written - before)
        assert (run_dir / "results.json").stat() == compacted
        return costs

    small, large = per_case_bytes(4), per_case_bytes(40)
    assert (
        max(large) == max(small) == min(large)
    )  # the same case, renamed: the same bytes, whatever came before


def test_runner_writes_a_case_pass_without_rewriting_results_json(tmp_path, monkeypatch):
    from fakes import scripted_backend

    from launchbench.results import store
    from launchbench.run import runner

    writes: list[Path] = []
    real = store.atomic_write_text
    monkeypatch.setattr(
        store, "atomic_write_text", lambda path, text: (writes.append(path), real(path, text))
    )
    scenario = tmp_path / "many.yaml"
    scenario.write_text(
        "name: many\ndescription: many small cases\nmeasure: {max_time: 0.05, min_samples: 3, warmup_time: 0.001}\n"
        "sweep:\n  length: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]\nchains:\n  empty: [{kind: empty, repeat: $length}]\n"
    )
    sizes: list[int] = []

    class Watch(runner.SilentEvents):
        def case_finished(self, result):
            sizes.append((tmp_path / "run" / JOURNAL).stat().st_size)

    plan = runner.plan([scenario])
    runner.run(
        plan, tmp_path / "run", runner.RunOptions(isolate=False, backend_factory=scripted_backend), Watch()
    )
    assert [p.name for p in writes] == [
        "results.json",
        "results.json",
    ]  # at the start and at the end, not per case
    steps = [b - a for a, b in zip(sizes, sizes[1:])]
    assert max(steps) < 1.2 * min(steps)  # one line per case, the same size whatever came before
