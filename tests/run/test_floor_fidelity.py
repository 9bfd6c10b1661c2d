"""The floor fidelity's decision and its rounds (benchmarks/floor_fidelity.py), on the H200's recorded
numbers (tests/data/floor_fidelity_h200_rounds.json: 3 rounds, launchbench floor against launch.cu
and the bare loops, 9 processes of each reference)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "data" / "floor_fidelity_h200_rounds.json"


@pytest.fixture
def ff():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("floor_fidelity")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _rows(ff):
    payload = json.loads(RECORDED.read_text())
    ours, refs = ff.load_values(payload["launchbench"]), ff.load_values(payload["references"])
    return {(r.layer, r.mode, r.args, r.level): r for r in ff.fidelity(ours, refs)}


def test_the_floor_state_is_the_values_within_the_band_of_the_lowest(ff):
    from _levels import floor_level

    assert floor_level([2.06, 1.28, 1.86, 1.30, 1.45, 1.35]) == [1.28, 1.30, 1.35]
    assert floor_level([1.28, 1.36], band=0.06) == [1.28]  # 6.25% above the lowest: the next state
    assert floor_level([]) == []


def test_the_graph_gap_of_the_high_level_is_the_host_state_not_the_loop(ff):
    """launch.cu's cuGraphLaunch at 16 arguments: the two-level split read launchbench 1.139x at 0
    arguments' high level; at the floor state both sides read the same launch (1.276 against 1.322 µs
    at 16 arguments), and eager cuLaunchKernel agrees there too."""
    rows = _rows(ff)
    assert rows[("c", "graph", 0, "high")].ratio == pytest.approx(1.139, abs=1e-3)
    floor = rows[("c", "graph", 16, "floor")]
    assert (floor.launchbench_us, floor.reference_us) == pytest.approx((1.276, 1.322), abs=1e-3)
    assert floor.decides and floor.within and (floor.launchbench_n, floor.reference_n) == (2, 2)
    assert rows[("c", "eager", 0, "floor")].within and rows[("gpu", "graph", None, "floor")].within
    assert not rows[("c", "graph", 16, "low")].decides


def test_a_floor_with_one_value_on_a_side_is_not_compared(ff):
    rows = _rows(ff)
    raw = rows[("cupy_raw", "graph", 0, "floor")]  # launchbench reached the 1.39 µs state in one stretch
    assert raw.within is None and raw.launchbench_n == 1 and raw.ratio == pytest.approx(0.995, abs=1e-3)
    text = ff.render(list(rows.values()), {}, {}, "shared")
    assert "floor rows within ±5% (the decision)" in text
    assert (
        "| cupy_raw | graph | 0 | floor | bare_layers.py cupy_raw | 1.391 | 1.397 | 0.995 | 1 / 2 | not compared |"
        in text
    )


def test_the_exit_status_follows_the_floor_rows_only(ff):
    rows = list(_rows(ff).values())
    assert not ff.decided(rows)  # torch: launchbench never reached its fast state (7.93 against 5.76 µs)
    assert ff.decided(
        [r for r in rows if r.layer != "torch" and (r.layer, r.mode, r.args) != ("c", "graph", 0)]
    )


def _opts(tmp_path: Path, **changes: object) -> argparse.Namespace:
    base = dict(
        launch="/x/launch", layers=["bindings", "gpu"], count=1000, batches=7, sample_time=0.005,
        bare=2, rounds=1, out=tmp_path, budget=0.0, max_time=5.0, stretches=8, ref_stretch=5, together=0,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **changes})


def test_the_references_batch_as_long_as_launchbench_samples(ff, tmp_path):
    rounds = ff.Rounds(_opts(tmp_path))
    first, second = rounds.reference_commands(0), rounds.reference_commands(1)
    assert first["launch"] == ["/x/launch", "1", "7", "1", "5000.0", "5"]  # from one launch up, 5 ms batches
    assert first["bare-bindings"][-8:] == [
        *("--count", "1", "--batches", "7", "--sample-time", "0.005", "--stretch", "5")
    ]
    assert first["bare-gpu"][first["bare-gpu"].index("--count") + 1] == "1000"
    assert "bare-gpu" not in second  # the GPU's per-node time: once a round
    fixed = ff.Rounds(_opts(tmp_path, sample_time=0.0)).reference_commands(0)
    assert fixed["launch"][1] == "1000"


def test_no_process_starts_once_the_budget_is_spent(ff, tmp_path):
    now = [0.0]
    rounds = ff.Rounds(_opts(tmp_path, budget=10.0), clock=lambda: now[0])
    assert rounds.within_budget(tmp_path / "launch-r0-p0.log")
    now[0] = 10.0
    assert rounds._run(["/bin/false"], tmp_path / "bare-gpu-r0-p0.log") == ""
    assert rounds.skipped == ["bare-gpu-r0-p0.log"] and not rounds.failed
    assert not (tmp_path / "bare-gpu-r0-p0.log").exists()


def test_the_device_script_leaves_three_files_within_its_time():
    text = (ROOT / "benchmarks" / "floor_fidelity_device.sh").read_text()
    steps = (ROOT / "benchmarks" / "floor_reference" / "steps.sh").read_text()
    assert "budget=${BUDGET_S:-135}" in text  # by default no process after 135 s, all ended by 160 s
    assert 'fidelity_rounds "$work" "$budget" $((budget + 25)) "${ROUNDS:-3}" "${BARE:-3}"' in text
    assert '--budget "$budget"' in steps and 'timeout "$limit"' in steps
    written = [line for line in text.splitlines() if '"$out/' in line and not line.startswith("#")]
    assert written == [
        'cp "$work/fidelity/fidelity.md" "$work/fidelity/fidelity.json" "$out/" 2>/dev/null',
        'tar czf "$out/fidelity-logs.tar.gz" -C "$work" --exclude launch --exclude \'*.png\' --exclude floor.md \\',
        'tail -4 "$out/fidelity.md" 2>/dev/null',
    ]


@pytest.fixture
def bare(monkeypatch):
    """bare_layers.py without CuPy: its module needs CuPy only inside the functions that launch."""
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks" / "floor_reference"))
    module = importlib.import_module("bare_layers")
    yield module
    sys.modules.pop("bare_layers", None)


@pytest.mark.parametrize("per_call_s", [1.3e-6, 4.1e-6, 13.2e-6, 51e-6])
def test_a_reference_batch_is_as_long_as_a_launchbench_sample(bare, monkeypatch, per_call_s):
    """The bare loop's calls per batch are the sampler's iterations per sample for the same cost."""
    from launchbench.measure.sampler import BatchTiming, Sampler
    from launchbench.scenario.core import MeasureSettings

    monkeypatch.setattr(bare, "timed", lambda _stream, calls, _mark, _f, _a: per_call_s)

    class Loop:
        launches_per_iter = 1

        def run_batch(self, iters: int) -> BatchTiming:
            return BatchTiming(iters, iters * per_call_s, iters * per_call_s, None)

        def run_latency(self) -> float:
            return per_call_s

    settings = MeasureSettings()
    sampler_iters = Sampler(settings, clock=None)._calibrate(Loop())  # type: ignore[arg-type]
    assert bare.calibrated(None, 1, 256, (print, ()), settings.sample_time) == sampler_iters
    assert bare.calibrated(None, 1000, 256, (print, ()), 0.0) == 1000  # --sample-time 0: COUNT as it is


def test_a_reference_gives_its_stretch_medians_where_it_printed_them(ff):
    text = "\n".join(
        [
            "nvcc noise",
            '{"layer": "c", "method": "cuGraphLaunch", "args": 4, "nodes": 1, "us_per_launch": 1.5,'
            ' "stretches_us": [1.4, 1.5, 2.1]}',
            '{"layer": "bindings", "mode": "eager", "args": 0, "us_per_launch": 4.2}',
        ]
    )
    assert ff.parse_reference(text) == {("c", "graph", 4): [1.4, 1.5, 2.1], ("bindings", "eager", 0): [4.2]}
    rounds = ff.Rounds(_opts(Path(".")))
    rounds._add_reference(ff.parse_reference(text))
    rounds._add_reference(ff.parse_reference(text))
    assert rounds.refs[("c", "graph", 4)] == [1.4, 1.5, 2.1, 1.4, 1.5, 2.1]
    assert rounds.ref_counts == {("c", "graph", 4): [3, 3], ("bindings", "eager", 0): [1, 1]}


def test_the_bare_loop_prints_the_medians_of_its_stretches(bare, capsys, monkeypatch):
    monkeypatch.setattr(bare, "STRETCH", [5])
    values = [1.0, 1.1, 0.9, 1.0, 1.2, 2.0, 2.1, 1.9, 2.2, 2.0, 3.0, 3.1, 2.9, 3.0, 3.2, 9.0, 9.0]
    bare.emit("cupy_raw", "graph", 0, values)
    line = json.loads(capsys.readouterr().out)
    assert line["stretches_us"] == [1.0, 2.0, 3.1]  # the last 7 values (5 + the 2 left) make the third
    assert line["us_per_launch"] == 2.1
    monkeypatch.setattr(bare, "STRETCH", [0])
    bare.emit("cupy_raw", "graph", 0, values)
    assert "stretches_us" not in json.loads(capsys.readouterr().out)


def test_launch_cu_prints_the_same_stretch_medians_as_the_bare_loop(bare, tmp_path):
    """launch.cu's report() (compiled alone with the host's C++ compiler) against bare_layers' emit."""
    import shutil
    import subprocess

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no C++ compiler on this machine")
    source = (ROOT / "benchmarks" / "floor_reference" / "launch.cu").read_text()
    pieces = source[source.index("static double median") : source.index("template <typename Chevron>")]
    values = [1.0, 1.1, 0.9, 1.0, 1.2, 2.0, 2.1, 1.9, 2.2, 2.0, 3.0, 3.1, 2.9, 3.0, 3.2, 9.0, 9.0]
    listed = ", ".join(map(str, values))
    program = tmp_path / "report.cpp"
    program.write_text(
        "#include <algorithm>\n#include <cstdio>\n#include <vector>\n"
        + pieces
        + f'int main() {{ std::vector<double> v = {{{listed}}}; g_stretch = 5; report("cuGraphLaunch", 4, 1, v); }}\n'
    )
    subprocess.run([compiler, "-O2", "-o", str(tmp_path / "report"), str(program)], check=True)
    printed = json.loads(subprocess.run([str(tmp_path / "report")], capture_output=True, text=True).stdout)
    assert printed["stretches_us"] == bare.stretch_medians(values, 5) == [1.0, 2.0, 3.1]


def test_the_summary_says_which_way_the_rows_outside_miss(ff):
    """results/floor-h200/torch-process/fidelity-c: a host whose reference processes rarely reached the
    fast state; all 15 floor rows outside ±5% read launchbench faster than its reference."""
    payload = json.loads((ROOT / "results/floor-h200/torch-process/fidelity-c/fidelity.json").read_text())
    rows = ff.fidelity(ff.load_values(payload["launchbench"]), ff.load_values(payload["references"]))
    text = ff.render(rows, {}, {}, "shared")
    assert "9 of 24 floor rows within ±5% (the decision)" in text
    assert "Outside: 0 with launchbench slower, 15 with launchbench faster." in text
    recorded = {(r.layer, r.mode, r.args, r.level): r for r in rows}
    assert recorded[("cupy_raw", "graph", 0, "floor")].ratio == pytest.approx(0.681, abs=1e-3)


def test_a_reference_is_checked_against_itself_by_process_parity(ff):
    """Processes 0 and 2 against 1 and 3, each side at its floor state; recorded counts cut the values."""
    refs = {("c", "graph", 0): [1.30, 1.31, 2.0, 1.50, 1.52, 2.1, 1.29, 1.33, 2.2, 1.49, 1.51, 2.2]}
    (check,) = ff.self_checks(refs, {("c", "graph", 0): [3, 3, 3, 3]})
    assert (check.even_n, check.odd_n) == (4, 4) and check.ratio == pytest.approx(1.305 / 1.505, abs=1e-3)
    assert check.within is False
    assert ff.processes([1.0, 2.0, 3.0, 4.0], [1, 3]) == [[1.0], [2.0, 3.0, 4.0]]
    assert ff.processes([1.0, 2.0, 3.0, 4.0], None) == [[1.0, 2.0, 3.0], [4.0]]  # legacy: 3 a process
    (few,) = ff.self_checks({("gpu", "graph", None): [0.5, 0.5, 0.5, 0.51]}, {("gpu", "graph", None): [1, 3]})
    assert few.within is None  # one value at the even half's floor


def test_the_summary_says_where_the_references_reproduced_themselves(ff):
    """results/floor-h200/torch-process/fidelity-d: 10 of 25 references within ±5% of themselves; the
    floor rows against those were 9 of 10 within, against the others 6 of 15."""
    folder = ROOT / "results/floor-h200/torch-process/fidelity-d"
    payload = json.loads((folder / "fidelity.json").read_text())
    refs = ff.load_values(payload["references"])
    rows = ff.fidelity(ff.load_values(payload["launchbench"]), refs)
    checks = ff.self_checks(refs, ff.load_counts(payload["reference_counts"]))
    text = ff.render_self_checks(checks, rows)
    assert (
        "10 of 25 references within ±5% of themselves. Floor rows where the reference was: 9 of 10 within; "
        "where it was not: 6 of 15." in text
    )
    by_key = {(c.layer, c.mode, c.args): c for c in checks}
    assert by_key[("c", "eager", 0)].ratio == pytest.approx(1.256, abs=1e-3)
    assert "| c | eager | 0 |" in text and ("c", "chevron", 0) not in by_key


def test_a_rebuilt_table_keeps_the_recorded_rounds_time(ff, tmp_path):
    assert ff._recorded_seconds(tmp_path, {}) is None  # neither the JSON nor a table says
    (tmp_path / "fidelity.md").write_text("table\n\n(reanalysed from fidelity.json; the rounds took 242 s)\n")
    assert ff._recorded_seconds(tmp_path, {}) == 242.0
    assert ff._recorded_seconds(tmp_path, {"seconds": 471}) == 471.0
    rebuilt = "the table rebuilt from fidelity.json"
    assert ff._closing(471.0, rebuilt) == "(471 s; the table rebuilt from fidelity.json)"
    assert ff._closing(None, rebuilt) == "(the table rebuilt from fidelity.json)"
    assert ff._closing(12.4, None) == "(12 s)"


def test_the_python_layers_together_run_in_one_process_a_turn_alternating_with_the_others(ff, tmp_path):
    """--together: each round's reference turn adds that many `bare_layers.py python` processes (after
    the per-layer ones, before them in odd rounds), batched as the per-layer ones are, their values kept
    apart from the references'."""
    rounds = ff.Rounds(_opts(tmp_path, together=1, bare=1, layers=["bindings"]))
    assert rounds.together_command()[2:] == [
        *("python", "--count", "1", "--batches", "7", "--sample-time", "0.005", "--stretch", "5")
    ]
    order: list[str] = []
    line = '{"layer": "bindings", "mode": "eager", "args": 0, "us_per_launch": 4.0}'
    rounds._run = lambda command, log: order.append(log.name) or line  # type: ignore[method-assign]
    rounds.references(0)
    rounds.references(1)
    assert order == [
        "launch-r0-p0.log", "bare-bindings-r0-p0.log", "bare-python-r0-p0.log",
        "bare-python-r1-p0.log", "launch-r1-p0.log", "bare-bindings-r1-p0.log",
    ]  # fmt: skip
    assert rounds.together == {("bindings", "eager", 0): [4.0, 4.0]}
    assert rounds.together_counts == {("bindings", "eager", 0): [1, 1]}
    assert rounds.refs[("bindings", "eager", 0)] == [4.0] * 4  # launch.cu's line and the bare one's


def test_the_together_section_tells_the_process_shape_from_the_loop(ff):
    """Where launchbench agrees with the one process and the one process misses the per-layer processes,
    the row counts for the process's shape; a row either side cannot decide is not counted."""
    key, other, thin = ("bindings", "eager", 0), ("cupy_raw", "graph", 4), ("cupy_ufunc", "eager", None)
    ours = {key: [5.0, 5.1, 5.05], other: [1.40, 1.41], thin: [7.0, 7.1]}
    together = {key: [5.02, 5.08, 5.1], other: [1.50, 1.52], thin: [7.0]}
    refs = {key: [4.0, 4.05, 4.1], other: [1.51, 1.49], thin: [7.0, 7.05]}
    text = ff.render_together(ours, together, refs)
    assert "| bindings | eager | 0 | 0.994 | 3 / 3 | yes | 1.254 | 3 / 3 | NO |" in text
    assert "| cupy_raw | graph | 4 | 0.930 | 2 / 2 | NO | 1.007 | 2 / 2 | yes |" in text
    assert "| cupy_ufunc | eager | — | 1.007 | 2 / 1 | not compared | 0.996 | 1 / 2 | not compared |" in text
    assert (
        "2 rows decided both ways: launchbench within ±5% of the one process on 1; the one process outside "
        "±5% of one process per layer on 1; both at once (the process's shape, not launchbench's loop) on 1."
        in text
    )


def test_the_bare_python_choice_runs_every_python_layer_but_torch_in_order(bare, monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr(bare, "run_layer", lambda layer, *_: ran.append(layer))
    stand_in = sys.modules["cupy"]
    monkeypatch.setattr(stand_in, "cuda", types.SimpleNamespace(Stream=lambda **_: None), raising=False)
    monkeypatch.setattr(stand_in, "zeros", lambda *_a, **_k: None, raising=False)
    monkeypatch.setattr(stand_in, "float32", "float32", raising=False)
    monkeypatch.setattr(sys, "argv", ["bare_layers.py", "python"])
    bare.main()
    assert ran == ["bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc"]
    ran.clear()
    monkeypatch.setattr(sys, "argv", ["bare_layers.py", "torch"])
    bare.main()
    assert ran == ["torch"]


def _payload(
    ours: dict, refs: dict, counts: dict, processes: str | None = "layer", seconds: int = 100
) -> dict:
    payload = {"launchbench": ours, "references": refs, "reference_counts": counts, "seconds": seconds}
    payload |= {"failed": [], "skipped": [], **({"processes": processes} if processes else {})}
    return payload


def test_merged_runs_are_judged_as_one_run_of_all_their_processes(ff, tmp_path):
    """--merge: each key's values and its processes' counts one run after another (a run without counts
    cut LEGACY_PER_PROCESS a process), so the self-check's even and odd processes span both runs."""
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    key = "cupy_raw|graph|0"
    payload = _payload({key: [1.40, 1.41]}, {key: [1.40, 1.42, 1.39]}, {key: [2, 1]})
    (first / "fidelity.json").write_text(json.dumps(payload))
    legacy = _payload({key: [1.43]}, {key: [1.41, 1.40, 1.44, 1.38]}, {}, seconds=50)
    (second / "fidelity.json").write_text(json.dumps(legacy))
    run = ff.merged([ff.recorded(first), ff.recorded(second)])
    ours, refs = run.ours[("cupy_raw", "graph", 0)], run.refs[("cupy_raw", "graph", 0)]
    assert ours == [1.40, 1.41, 1.43] and refs == [1.40, 1.42, 1.39, 1.41, 1.40, 1.44, 1.38]
    assert run.counts[("cupy_raw", "graph", 0)] == [2, 1, 3, 1] and run.seconds == 150
    assert ff.processes(refs, run.counts[("cupy_raw", "graph", 0)]) == [
        [1.40, 1.42],
        [1.39],
        [1.41, 1.40, 1.44],
        [1.38],
    ]
    out = tmp_path / "merged"
    assert ff.report(run, out, "merged from 2 runs") == 0
    assert (out / "fidelity.md").read_text().rstrip().endswith("(150 s; merged from 2 runs)")
    assert json.loads((out / "fidelity.json").read_text())["reference_counts"] == {key: [2, 1, 3, 1]}


def test_runs_of_different_floor_layouts_are_not_merged(ff, tmp_path):
    dirs = []
    for name, processes in (("layer", "layer"), ("old", None)):  # a run before --processes: shared
        (tmp_path / name).mkdir()
        (tmp_path / name / "fidelity.json").write_text(json.dumps(_payload({}, {}, {}, processes)))
        dirs.append(ff.recorded(tmp_path / name))
    assert dirs[1].processes == "shared"
    with pytest.raises(SystemExit, match="different layouts: layer, shared"):
        ff.merged(dirs)


def _ratio_of_medians(mine, refs):
    import statistics

    return statistics.median(mine) / statistics.median(refs)


def test_the_draw_of_processes_tells_within_outside_and_undecided(ff):
    import _floor_draw as draw

    steady = [[1.00, 1.01], [1.00, 0.99], [1.01, 1.00], [0.99, 1.00]]
    assert draw.reading(*draw.interval(steady, steady, _ratio_of_medians, 400), 0.05) == "within"
    slower = [[v * 1.12 for v in p] for p in steady]
    assert draw.reading(*draw.interval(slower, steady, _ratio_of_medians, 400), 0.05) == "outside"
    # half the processes at a host level 20% up: which half a draw gets decides the ratio
    mixed = [[1.0, 1.0], [1.2, 1.2], [1.0, 1.0], [1.2, 1.2], [1.0, 1.0], [1.2, 1.2]]
    assert draw.reading(*draw.interval(mixed, steady, _ratio_of_medians, 400), 0.05) == "undecided"
    assert draw.interval(mixed, steady, _ratio_of_medians, 400) == draw.interval(
        mixed, steady, _ratio_of_medians, 400
    )  # seeded: a rebuilt table is the same table
    with pytest.raises(ValueError, match="add up to 3"):
        draw.cut([1.0, 1.1], [2, 1])


def test_the_floor_processes_counts_come_back_from_a_runs_logs(ff):
    """A run recorded before fidelity.json kept the floor processes' counts (per-layer/fidelity-d, 5
    floor processes): they are recovered from its floor runs in fidelity-logs.tar.gz, and the section
    counts every floor row."""
    out = ROOT / "results" / "floor-h200" / "per-layer" / "fidelity-d"
    payload = json.loads((out / "fidelity.json").read_text())
    payload.pop("launchbench_counts", None)  # as recorded before the counts were kept
    counts = ff._ours_counts(out, payload)
    ours = ff.load_values(payload["launchbench"])
    key = ("cupy_raw", "graph", 0)
    assert len(counts[key]) == 5 and sum(counts[key]) == len(ours[key])
    assert set(counts) == set(ours)
    run = ff.recorded(out)
    assert run.ours_counts == counts
    rows = ff.fidelity(run.ours, run.refs)
    draws = ff._draws(rows, run)
    assert len(draws) == sum(r.decides for r in rows) == 28
    text = __import__("_floor_draw").render(draws, 0.05)
    assert text.count("\n| ") == 30 and "of 28 floor rows within ±5% whatever the draw" in text
