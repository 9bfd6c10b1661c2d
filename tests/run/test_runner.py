"""The runner end to end on a scripted backend: the run readable after every case (from its journal), worker
isolation, interruption, crash and resume."""

import dataclasses
import time
from pathlib import Path

import pandas as pd
import pytest
from fakes import STARTS_FILE_VARIABLE, counting_backend, scripted_backend

from launchbench.errors import ResultsFileError
from launchbench.report.run_files import write_tables
from launchbench.results.metadata import Overrides
from launchbench.results.schema import RunRecord
from launchbench.results.store import load_run
from launchbench.run import runner

DATA = Path(__file__).parents[1] / "data" / "scripted"


def options(isolate: bool) -> runner.RunOptions:
    return runner.RunOptions(isolate=isolate, backend_factory=scripted_backend, write_tables=write_tables)


def test_in_process_run_writes_every_case(tmp_path):
    plan = runner.plan([DATA / "three.yaml"])
    assert [c.case_id for c in plan.cases] == [
        "empty/length=1",
        "empty/length=10",
        "scale/length=1",
        "scale/length=10",
        "sum",
    ]
    record = runner.run(plan, tmp_path / "run", options(isolate=False))
    assert record.status == "complete"
    table = pd.read_csv(tmp_path / "run" / "results.csv")
    assert len(table) == 10
    sums = table[table["case"] == "sum"].set_index("mode")
    assert sums.loc["graph", "status"] == "not_capturable"
    assert "scripted capture refusal" in sums.loc["graph", "reason"]
    assert sums.loc["eager", "wall_us_per_launch"] > 0
    graph = table[(table["mode"] == "graph") & (table["case"] == "empty/length=10")].iloc[0]
    assert graph["speedup"] > 1 and graph["graph_nodes"] == 10 and bool(graph["lifecycle_split"])
    assert (tmp_path / "run" / "costmodel.csv").exists()


def test_a_run_directory_is_never_overwritten(tmp_path):
    plan = runner.plan([DATA / "three.yaml"])
    runner.run(plan, tmp_path / "run", options(isolate=False))
    with pytest.raises(ResultsFileError, match="never overwritten"):
        runner.run(plan, tmp_path / "run", options(isolate=False))


def test_a_directory_holding_only_a_results_csv_is_refused_before_a_worker_starts(tmp_path, monkeypatch):
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.csv").write_text("scenario\n")
    with pytest.raises(ResultsFileError, match="never overwritten"):
        runner.run(
            runner.plan([DATA / "three.yaml"]),
            tmp_path / "run",
            runner.RunOptions(isolate=True, backend_factory=counting_backend),
        )
    assert not starts.exists()  # no worker (no GPU context) was started for a run that cannot be written


@pytest.fixture(scope="module")
def faults_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunRecord, int]:
    """faults.yaml in worker processes, 3 passes: its run directory, record and how many workers started.
    One case kills its worker and one faults it (each costs a fresh worker), in pass 1 only; passes 2
    and 3 measure the healthy cases in one worker each. Shared by the tests that read it."""
    tmp = tmp_path_factory.mktemp("faults")
    starts = tmp / "starts.txt"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STARTS_FILE_VARIABLE, str(starts))
        plan = runner.plan([DATA / "faults.yaml"], overrides=Overrides(passes=3))
        record = runner.run(
            plan,
            tmp / "run",
            runner.RunOptions(isolate=True, backend_factory=counting_backend, write_tables=write_tables),
        )
    return tmp / "run", record, len(starts.read_text().split())


def test_worker_isolation_fails_only_the_faulting_cases(faults_run):
    run_dir, record, _ = faults_run
    by_chain = {c.chain: c for c in record.cases}
    assert list(by_chain) == ["a_first", "b_crash", "c_oob", "d_last", "e_huge"]
    assert by_chain["a_first"].error is None and by_chain["d_last"].error is None
    assert "worker process died (exit code 7)" in by_chain["b_crash"].error
    assert "illegal memory access" in by_chain["c_oob"].error
    assert by_chain["e_huge"].modes["eager"].status == "skipped"
    assert "GiB" in by_chain["e_huge"].error
    assert load_run(run_dir).status == "complete"


def test_every_pass_runs_in_a_fresh_worker_process(tmp_path, monkeypatch):
    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=3))
    record = runner.run(
        plan, tmp_path / "run", runner.RunOptions(isolate=True, backend_factory=counting_backend)
    )
    pids = starts.read_text().split()
    assert len(pids) == 3 and len(set(pids)) == 3  # one worker per pass, each case measured in all three
    assert all(c.passes_done == 3 for c in record.cases)


def test_a_case_that_failed_is_not_run_again_in_later_passes(faults_run):
    _, record, workers = faults_run
    assert workers == 3 + 2
    by_chain = {c.chain: c for c in record.cases}
    assert by_chain["a_first"].passes_done == 3 and by_chain["b_crash"].passes_done == 1


class InterruptAfter(runner.SilentEvents):
    def __init__(self, cases: int):
        self.left = cases

    def case_finished(self, result):
        self.left -= 1
        if self.left == 0:
            raise KeyboardInterrupt


def test_interrupted_run_keeps_completed_cases_and_resume_finishes(tmp_path):
    plan = runner.plan([DATA / "three.yaml"])
    with pytest.raises(KeyboardInterrupt):
        runner.run(plan, tmp_path / "run", options(isolate=False), InterruptAfter(2))
    partial = load_run(tmp_path / "run")
    assert partial.status == "interrupted" and len(partial.cases) == 2
    record = runner.run(plan, tmp_path / "run", options(isolate=False), resume=partial)
    assert record.status == "complete"
    assert [c.case_id for c in record.cases][:2] == [c.case_id for c in partial.cases]
    assert len(record.cases) == 5


def test_measure_overrides_reach_every_case():
    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(target_noise=0.05, max_time=2.0))
    assert all(c.measure.target_noise == 0.05 and c.measure.max_time == 2.0 for c in plan.cases)


def test_cases_are_measured_in_passes_and_pooled(tmp_path):
    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=3))
    seen = []

    class Recorder(runner.SilentEvents):
        def case_started(self, case, index, total):
            seen.append((case.case_id, total))

    record = runner.run(plan, tmp_path / "run", options(isolate=False), Recorder())
    assert [case for case, _ in seen[:5]] == [
        case for case, _ in seen[5:10]
    ]  # pass 1 over all cases, then pass 2
    assert len(seen) == 15 and seen[0][1] == 15
    case = record.case("three", "empty/length=10")
    assert case.passes_done == 3
    eager = case.modes["eager"]
    assert len(eager.pass_sizes) == 3 and sum(eager.pass_sizes) == len(eager.samples["wall_s_per_iter"])
    assert len(case.modes["graph"].lifecycle_passes) == 3


def test_pass_settings_split_the_budget():
    case = runner.plan(
        [DATA / "three.yaml"], overrides=Overrides(passes=4, max_time=2.0, min_samples=10)
    ).cases[0]
    one = runner.pass_settings(case)
    assert one.measure.passes == 1 and one.measure.max_time == 0.5 and one.measure.min_samples == 3


class FileWatcher(runner.SilentEvents):
    """Records, as each case finishes, how many cases results.json and results.csv hold."""

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.seen: list[tuple[int, int]] = []

    def case_finished(self, result) -> None:
        cases = len(load_run(self.run_dir).cases)
        csv = self.run_dir / "results.csv"
        rows = len(pd.read_csv(csv)) if csv.exists() and csv.stat().st_size else 0
        self.seen.append((cases, rows))


def test_the_run_reads_back_after_every_case_tables_after_every_pass_so_paced(tmp_path):
    from launchbench.run.session import TablePacing

    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2))
    watcher = FileWatcher(tmp_path / "run")
    every_pass = dataclasses.replace(
        options(isolate=False), tables_pacing=TablePacing(every_s=0.0, share=1.0)
    )
    runner.run(plan, tmp_path / "run", every_pass, watcher)
    assert [cases for cases, _ in watcher.seen] == [1, 2, 3, 4, 5, 5, 5, 5, 5, 5]
    # the CSV lags within a pass (no rows before the first pass ends) and is complete at each pass's end
    assert [rows for _, rows in watcher.seen[:4]] == [0, 0, 0, 0] and watcher.seen[4][1] == 10
    assert len(pd.read_csv(tmp_path / "run" / "results.csv")) == 10


def test_a_run_shorter_than_its_pacing_gets_its_tables_at_its_end(tmp_path):
    from launchbench.run.session import TablePacing

    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2))
    watcher = FileWatcher(tmp_path / "run")
    hourly = dataclasses.replace(options(isolate=False), tables_pacing=TablePacing(every_s=3600.0))
    runner.run(plan, tmp_path / "run", hourly, watcher)
    assert [cases for cases, _ in watcher.seen] == [1, 2, 3, 4, 5, 5, 5, 5, 5, 5]
    assert [rows for _, rows in watcher.seen] == [0] * 10  # no pass's end wrote them
    assert len(pd.read_csv(tmp_path / "run" / "results.csv")) == 10


def test_a_crashed_run_is_read_and_resumed_from_its_journal(tmp_path, monkeypatch):
    """A run killed without its last words (no compaction): results.json still says 0 cases, the journal
    holds 2; reading the run replays the journal and --resume finishes from there."""
    from launchbench.results.store import RunJournal

    plan = runner.plan([DATA / "three.yaml"])
    with monkeypatch.context() as patch:
        patch.setattr(
            RunJournal, "compact", lambda self, record: None
        )  # as if killed: nothing written on the way out
        with pytest.raises(KeyboardInterrupt):
            runner.run(plan, tmp_path / "run", options(isolate=False), InterruptAfter(2))
    assert '"cases":[]' in (tmp_path / "run" / "results.json").read_text()
    crashed = load_run(tmp_path / "run")
    assert crashed.status == "running" and len(crashed.cases) == 2
    record = runner.run(plan, tmp_path / "run", options(isolate=False), resume=crashed)
    assert record.status == "complete" and len(record.cases) == 5
    back = load_run(tmp_path / "run")
    assert back.status == "complete" and back.cases == record.cases


PHASES = ("prepare_s", "warmup_s", "settle_s", "calibrate_s", "sampling_s", "check_s", "write_s")
WORKER_PHASES = ("boot_s", "backend_s", "canary_s", "ready_s")


def _samples(record: RunRecord) -> list:
    return [
        (c.case_id, mode, [p.samples for p in m.passes]) for c in record.cases for mode, m in c.modes.items()
    ]


def test_a_profiled_run_records_every_case_pass_phase_and_measures_the_same(tmp_path):
    import dataclasses
    import json

    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2))
    plain = runner.run(plan, tmp_path / "plain", options(isolate=True))
    profile = tmp_path / "profile.jsonl"
    profiled = runner.run(
        plan, tmp_path / "profiled", dataclasses.replace(options(isolate=True), profile=profile)
    )
    assert _samples(profiled) == _samples(plain)  # the scripted clock: the same samples, profile or not
    lines = [json.loads(line) for line in profile.read_text().splitlines()]
    assert [(e["case_id"], e["pass"]) for e in lines] == [(c.case_id, k) for k in (0, 1) for c in plan.cases]
    for entry in lines:
        phases = entry["phases"]
        assert set(PHASES) <= set(phases) and all(phases[p] >= 0 for p in phases)
        assert phases["sampling_s"] > 0  # by the scripted clock: the rounds' simulated seconds
    # a fresh worker starts for every pass: its start is charged to the pass's first case
    started = [(e["case_id"], e["pass"]) for e in lines if set(WORKER_PHASES) <= set(e["phases"])]
    assert started == [(plan.cases[0].case_id, 0), (plan.cases[0].case_id, 1)]
    assert all(lines[0]["phases"][p] > 0 for p in ("boot_s", "ready_s"))


def test_an_in_process_profile_has_the_case_phases_without_a_worker_start(tmp_path):
    import dataclasses
    import json

    profile = tmp_path / "profile.jsonl"
    plan = runner.plan([DATA / "three.yaml"])
    runner.run(plan, tmp_path / "run", dataclasses.replace(options(isolate=False), profile=profile))
    lines = [json.loads(line) for line in profile.read_text().splitlines()]
    assert len(lines) == len(plan.cases) * plan.cases[0].measure.passes
    assert all(set(PHASES) <= set(e["phases"]) and "boot_s" not in e["phases"] for e in lines)


def test_the_profile_script_accounts_for_the_wall_time_by_phase(tmp_path, capsys):
    import importlib.util
    import json

    path = Path(__file__).parents[2] / "benchmarks" / "profile_phases.py"
    spec = importlib.util.spec_from_file_location("profile_phases", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    worker = {"boot_s": 0.5, "backend_s": 1.0, "canary_s": 0.25, "ready_s": 2.0}
    case = {"prepare_s": 0.1, "warmup_s": 0.2, "settle_s": 0.0, "calibrate_s": 0.1, "sampling_s": 1.0}
    case |= {"check_s": 0.05, "write_s": 0.05}
    profile = tmp_path / "profile.jsonl"
    lines = [
        {"case_id": "a", "pass": 0, "phases": {**worker, **case}},
        {"case_id": "b", "pass": 0, "phases": case},
    ]
    profile.write_text("".join(json.dumps(line) + "\n" for line in lines))
    totals = script.summarize(profile, wall=10.0)
    assert totals["sampling_s"] == 2.0 and totals["boot_s"] == 0.5 and totals["wall"] == 10.0
    # 10 s less the parts (1.75 s of worker start, 3 s of the cases' phases) less the rest of the start
    assert totals["other"] == pytest.approx(10.0 - 1.75 - 3.0 - 0.25)
    script.main(["--summarize", str(profile), "--wall", "10"])
    assert "sampling_s" in capsys.readouterr().out


def wait_until_idle(pid: int, still_s: float = 0.5, limit_s: float = 30.0) -> None:
    """Return once process ``pid`` sleeps with its CPU time unchanged for ``still_s`` (its imports done,
    blocked on a read), or after ``limit_s``: as long as its start takes on this machine, however loaded."""
    import time

    def state() -> tuple[str, int]:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])  # state, utime + stime in clock ticks

    deadline = time.monotonic() + limit_s
    last, still_since = state(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = state()
        if now != last or now[0] != "S":
            last, still_since = now, time.monotonic()
        elif time.monotonic() - still_since >= still_s:
            return


def test_a_worker_touches_no_backend_before_the_parent_asks(tmp_path, monkeypatch):
    """A spawned worker imports launchbench and waits: its backend (the CUDA context, the first canary
    reading) starts only once ``start`` sends StartBackend."""
    from launchbench.run.executor import WorkerProcess

    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    worker = WorkerProcess(counting_backend, 0)
    try:
        assert worker.booted()  # its imports are done: it says so, then waits
        wait_until_idle(worker.process.pid)  # a worker that did not wait would be up by now
        assert not starts.exists() and not worker.conn.poll(0)  # no backend, no Ready yet
        worker.start()
        assert len(starts.read_text().split()) == 1 and worker.start_times is not None
    finally:
        worker.stop()


def test_a_worker_started_after_another_reads_its_reference_only_once_that_one_has_ended(
    tmp_path, monkeypatch
):
    """``start_after``: the new worker starts its backend while the old one is asked to end; its first
    canary reading and Ready wait until the old one has ended. A worker asked to start so (a held one)
    but stopped instead ends without a reading."""
    from launchbench.run.executor import WorkerProcess
    from launchbench.run.protocol import StartBackend

    starts = tmp_path / "starts.txt"
    monkeypatch.setenv(STARTS_FILE_VARIABLE, str(starts))
    old, new, held = (WorkerProcess(counting_backend, 0) for _ in range(3))
    try:
        old.start()
        assert new.booted() and held.booted()
        held._send_start(StartBackend(hold=True))
        deadline = time.monotonic() + 60
        while len(starts.read_text().split()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        wait_until_idle(held.process.pid)  # its backend made, waiting for the parent
        assert not held.conn.poll(0)  # no reading, no Ready
        new.start_after(old)
        assert not old.alive() and old.process.exitcode == 0  # ended before the new one reads
        assert new.start() is not None and new.start_times is not None
        held.stop()
        assert held.process.exitcode == 0
    finally:
        for worker in (old, new, held):
            worker.stop()


class _Spawned:
    """A worker as the executor sees it, recording what is done to it."""

    start_times = None

    def __init__(self, log: list[str]):
        self.log = log
        log.append("spawn")

    def ask_start(self) -> None:
        self.log.append("ask")

    def start_after(self, ending: "_Spawned") -> None:
        self.log.append("ask after the last ends")

    def ask_stop(self) -> None:
        self.log.append("ask stop")

    def booted(self) -> bool:
        self.log.append("booted")
        return True

    def start(self) -> dict:
        self.log.append("start")
        return {}

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        self.log.append("stop")


def test_each_pass_worker_is_spawned_a_pass_ahead_and_started_between_the_passes():
    """The next pass's worker starts its backend while the last one ends; its first canary reading
    waits until that one has ended."""
    from launchbench.run.executor import WorkerExecutor

    log: list[str] = []
    executor = WorkerExecutor(scripted_backend, 0, spawn=lambda: _Spawned(log))
    executor.start()
    executor._worker_for(0)
    assert log == ["spawn", "start"]
    executor.next_pass(1, then=2)  # pass 1's spawned, pass 0's asked to end, pass 1's asked; pass 2's spawned
    handover = ["ask after the last ends"]
    assert log[2:] == ["spawn", *handover, "spawn"]
    executor._worker_for(1)  # the first case waits for pass 1's backend and pass 2's imports
    assert log[5:] == ["start", "booted"]
    executor._worker_for(1)  # the same pass: the same worker
    assert log[7:] == []
    executor.next_pass(2, then=3)  # pass 2's worker is the one spawned ahead
    assert log[7:] == [*handover, "spawn"]
    executor._worker_for(2)
    executor.next_pass(3)  # the last pass the schedule holds: nothing spawned beyond it
    assert log[9:] == ["start", "booted", *handover]
    executor._worker_for(3)
    executor.next_pass(4)  # a pass added later: its worker spawned then
    assert log[12:] == ["start", "spawn", *handover]
    executor.close()  # the one never waited for is stopped too
    assert log[15:] == ["stop"]


def test_a_worker_asked_to_start_ahead_reports_only_the_wait_for_it(tmp_path):
    """``ready_s`` counts the wait from ``start`` on, not the time since ``ask_start``; asking twice
    is one ask."""
    import time

    from launchbench.run.executor import WorkerProcess

    worker = WorkerProcess(scripted_backend, 0)
    try:
        asked = time.perf_counter()
        worker.ask_start()
        worker.ask_start()
        time.sleep(0.5)
        assert worker.start()
        assert worker.start_times is not None
        assert worker.start_times.ready_s <= time.perf_counter() - asked - 0.5
        assert worker.alive()
    finally:
        worker.stop()


def test_a_worker_is_spawned_ahead_only_where_a_pass_may_follow():
    """The schedule's next pass, else a pass the host-level fit may add (a case past its planned passes,
    below its cap, with the passes a fit needs), else none: no worker spawned for nothing."""
    import dataclasses

    from launchbench.measure.levels import MIN_PASSES
    from launchbench.run.extra_passes import may_follow, pass_cap
    from launchbench.run.runner import _pass_after

    case = runner.plan([DATA / "three.yaml"]).cases[0]
    five = dataclasses.replace(case, measure=case.measure.model_copy(update={"passes": 5}))
    two = dataclasses.replace(case, measure=case.measure.model_copy(update={"passes": 2}))
    assert pass_cap(five) == 10 and MIN_PASSES == 4
    assert [may_follow([five], p) for p in (2, 3, 4, 8, 9)] == [False, False, True, True, False]
    assert [may_follow([two], p) for p in (0, 1, 2)] == [False, False, False]  # too few passes to fit
    schedule = [(five, p) for p in range(5)]
    assert _pass_after([five], schedule, 1) == 2  # the schedule's own next
    assert _pass_after([five], schedule, 4) == 5  # one the fit may add
    assert _pass_after([two], [(two, 0), (two, 1)], 1) is None


def test_a_pass_whose_last_case_failed_before_still_ends_with_its_tables(tmp_path):
    """A case that failed in an earlier pass is not measured again, and the pass it is last in still
    ends as every pass does: its tables written (the last pass's by the run's end, once), where the
    pacing writes them after every pass."""
    from fakes import ScriptedBackend

    from launchbench.run.session import TablePacing

    plan = runner.plan([DATA / "faults.yaml"], overrides=Overrides(passes=3))
    plan = runner.Plan(
        [c for c in plan.cases if c.case_id in ("a_first", "e_huge")], plan.scenarios, plan.files
    )
    written: list[int] = []
    options = runner.RunOptions(
        isolate=False,
        backend_factory=lambda _device: ScriptedBackend(),
        write_tables=lambda _dir, record: written.append(record.case("faults", "a_first").passes_done),
        tables_pacing=TablePacing(every_s=0.0, share=1.0),
    )
    record = runner.run(plan, tmp_path / "run", options)
    assert record.case("faults", "e_huge").error and record.case("faults", "e_huge").passes_done == 1
    assert written == [1, 2, 3]  # after each of the first 2 passes, then the run's end


def test_the_run_asks_its_workers_to_end_before_writing_its_record_and_waits_for_them_after(
    tmp_path, monkeypatch
):
    """The last worker lets go of its CUDA context while results.json and the tables are written; the
    run waits for it before it returns."""
    from launchbench.run import session as session_module
    from launchbench.run.executor import WorkerExecutor

    executor = WorkerExecutor(scripted_backend, 0)
    seen: list[bool] = []
    finish = session_module.RunSession.finish

    def finishing(self, status):
        worker = executor._worker
        seen.append(worker is not None and worker._stop_asked)
        return finish(self, status)

    monkeypatch.setattr(session_module.RunSession, "finish", finishing)
    plan = runner.plan([DATA / "three.yaml"], overrides=Overrides(passes=2, max_time=0.2))
    last = []
    original_close = executor.close

    def closing():
        last.extend(w.process for w in (executor._worker,) if w is not None)
        original_close()

    monkeypatch.setattr(executor, "close", closing)
    runner.run(plan, tmp_path / "run", runner.RunOptions(backend_factory=scripted_backend), executor=executor)
    assert seen == [True]  # asked to end before the finish (it may already be gone)
    assert last and not any(process.is_alive() for process in last)  # ended once the run returned
