"""launchbench floor without a GPU: the native floor's C source (it compiles with the system's C compiler
and, with no driver library, refuses in one line), the skip reasons, the floor: block, the report and
figure from recorded numbers, the run it stores, the CLI's refusals and the fidelity script's parts."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import shutil
import statistics
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from launchbench.backend.floor.base import LayerUnavailable, LayerWorkloads, kernel_source
from launchbench.backend.floor.native import SOURCE, NativeLibrary, build_library, c_compiler
from launchbench.cli import cli
from launchbench.errors import ScenarioError
from launchbench.measure.sampler import ModeSamples, SamplingOutcome
from launchbench.report.floor import HostFacts, floor_report, host_lines, render_markdown
from launchbench.report.plots.floor import draw_floor_figure
from launchbench.report.run_files import write_tables
from launchbench.results.metadata import Overrides
from launchbench.results.schema import HostData, RunRecord, ThreadPlace
from launchbench.results.store import load_run, write_run
from launchbench.run.floor import (
    FloorRequest,
    built_in_scenario,
    case_result,
    in_this_process,
    measure_apart,
    plan,
)
from launchbench.scenario.core import MeasureSettings
from launchbench.scenario.floor import Floor
from launchbench.scenario.load import load_scenario_file

ROOT = Path(__file__).resolve().parents[2]
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
US = 1e-6
# eager µs per launch by layer (the H200's figures from the issue), +0.02 µs per kernel argument
EAGER = {
    "c": 3.7,
    "bindings": 4.8,
    "cupy_raw": 5.3,
    "cupy_raw_stream": 5.5,
    "cupy_elementwise": 8.7,
    "cupy_ufunc": 9.0,
}
GRAPH = {"c": 1.1, "bindings": 1.4, "cupy_raw": 1.6, "cupy_elementwise": 1.7, "cupy_ufunc": 1.7}
HOST = HostData(
    pid=1, start=ThreadPlace(cpu=3, mhz=3100.0, governor="performance", node=0, siblings="3,67"), gpu_node=1
)


@needs_cc
def test_native_source_compiles_and_refuses_without_the_driver_in_one_line(tmp_path):
    library = build_library(tmp_path)
    assert library.is_file()
    with pytest.raises(LayerUnavailable) as refused:
        NativeLibrary(library, driver="libcuda-absent-for-this-test.so.1")
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("cannot load the CUDA driver library: libcuda-absent-for-this-test.so.1")


def test_native_source_declares_the_driver_api_itself():
    includes = [line.split()[1] for line in SOURCE.read_text().splitlines() if line.startswith("#include")]
    assert includes == ["<dlfcn.h>", "<stddef.h>", "<stdio.h>"]  # no CUDA header


@needs_cc
def test_a_compiler_error_is_a_one_line_skip_reason(tmp_path):
    broken = tmp_path / "broken.c"
    broken.write_text("int lbf_open( {\n")
    with pytest.raises(LayerUnavailable) as refused:
        build_library(tmp_path, broken)
    assert "could not build" in str(refused.value) and "error" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_no_c_compiler_is_a_skip_reason(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(LayerUnavailable, match="no C compiler: cc is not on PATH and CC is not set"):
        c_compiler()


def test_kernel_source_has_one_empty_kernel_per_argument_count():
    source = kernel_source([16, 0, 4])
    assert source.count("__global__") == 3
    assert "void lb_floor_0() {}" in source
    assert source.count("const float* a") == 20


def test_plan_gives_the_argument_axis_only_to_the_kernel_layers():
    cases = plan(Floor(layers=["cupy_ufunc", "c", "gpu"], args=[16, 0]))
    assert [c.case_id for c in cases] == ["c/args=0", "c/args=16", "cupy_ufunc", "gpu"]


def test_each_layer_gets_a_process_of_its_own_unless_the_block_shares_one():
    """processes: layer (the default) keeps every layer out of the command's process; shared keeps all but
    torch in it."""
    assert Floor().processes == "layer"
    assert not any(in_this_process(Floor(), layer) for layer in Floor().layers)
    shared = Floor(processes="shared")
    assert [layer for layer in shared.layers if not in_this_process(shared, layer)] == ["torch"]


def test_the_command_line_sets_the_process_layout_over_the_scenario_s(tmp_path):
    from launchbench.cli.floor import _spec

    path = _scenario(tmp_path, "  processes: shared\n  max_time: 5\n")
    assert _spec(path, (), None, None)[0].processes == "shared"
    spec = _spec(path, ("gpu",), None, "layer")[0]
    assert (spec.processes, spec.layers, spec.max_time) == ("layer", ["gpu"], 5)


def _scenario(tmp_path: Path, floor: str) -> Path:
    path = tmp_path / "floor.yaml"
    path.write_text(f"name: f\ndescription: d\nchain:\n  - kind: empty\nfloor:\n{floor}")
    return path


def test_the_floor_block_validates(tmp_path):
    loaded = load_scenario_file(_scenario(tmp_path, "  layers: [gpu, c]\n  args: [4]\n  max_time: 5\n"))
    assert loaded.scenario.floor == Floor(layers=["c", "gpu"], args=[4], max_time=5)
    assert load_scenario_file(ROOT / "scenarios" / "floor.yaml").scenario.floor == Floor()


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("  args: [0, 65]\n", "65 kernel arguments: give 0 to 64"),
        ("  layers: [c, c]\n", "a layer is listed twice"),
        ("  layers: [fortran]\n", "fortran"),
        ("  nodes: 0\n", "nodes"),
        ("  colour: red\n", "colour"),
        ("  processes: two\n", "processes"),
    ],
)
def test_a_bad_floor_block_is_refused_in_one_line(tmp_path, block, said):
    with pytest.raises(ScenarioError) as refused:
        load_scenario_file(_scenario(tmp_path, block))
    assert said in str(refused.value) and "\n" not in str(refused.value)


def _samples(value: float, gpu: float | None = None) -> ModeSamples:
    return ModeSamples(
        iters_per_sample=100,
        wall=[value * (1 + k * 1e-3) for k in range(10)],
        cpu=[value] * 10,
        gpu=[gpu if gpu is not None else value] * 10,
        latency=[1e-5] * 10,
        target_met=True,
    )


def recorded_run() -> RunRecord:
    """A floor run of recorded numbers: torch skipped, the gpu layer a graph only."""
    spec = Floor()
    request = FloorRequest(spec, built_in_scenario(spec), MeasureSettings())
    modes: dict[str, ModeSamples] = {"gpu|graph": _samples(50 * US, gpu=50 * US)}
    for case in plan(spec):
        extra = (case.args or 0) * 0.02
        if case.layer in EAGER:
            modes[f"{case.case_id}|eager"] = _samples((EAGER[case.layer] + extra) * US)
        if case.layer in GRAPH:
            modes[f"{case.case_id}|graph"] = _samples((GRAPH[case.layer] + extra) * US)
    outcome = SamplingOutcome(modes, False, 0.0, None, ())
    cases = []
    for case in plan(spec):
        if case.layer == "torch":
            cases.append(
                case_result(
                    request, case, None, "torch is not installed (No module named 'torch')", None, HOST
                )
            )
            continue
        launches = 100 if case.layer == "gpu" else 1
        cases.append(
            case_result(request, case, LayerWorkloads({}, launches, "why absent"), None, outcome, HOST)
        )
    environment = {
        "host": {"cpu": "Intel Xeon Platinum 8480+", "kernel": "6.8.0"},
        "driver": "580.95",
        "gpu": {"name": "NVIDIA H200"},
    }
    return RunRecord(
        launchbench_version="0",
        started="2026-12-01T14:00:00+00:00",
        status="complete",
        environment=environment,
        scenarios=[request.scenario],
        cases=cases,
    )


def test_the_report_stacks_each_layer_on_its_parent_on_the_call_path():
    rows = {(r.layer, r.args): r for r in floor_report(recorded_run()).rows}
    bindings = rows[("bindings", 16)]
    assert bindings.below == "c"
    assert bindings.above_s == pytest.approx((4.8 - 3.7) * US, rel=1e-2)
    assert bindings.above_pct == pytest.approx(100 * 1.1 / 5.12, rel=1e-2)
    assert bindings.saves_s == pytest.approx((5.12 - 1.72) * US, rel=1e-2)
    assert rows[("c", 0)].above_s == rows[("c", 0)].eager_s and rows[("c", 0)].below is None
    ufunc = rows[("cupy_ufunc", None)]
    assert ufunc.below == "cupy_raw" and ufunc.above_s == pytest.approx((9.0 - 5.3) * US, rel=1e-2)
    assert ufunc.above_floor_s == pytest.approx((9.0 - 3.7) * US, rel=1e-2)  # over c at 0 args
    raw = rows[("cupy_raw", 16)]  # CuPy's RawKernel goes to the driver itself, not through cuda-bindings
    assert raw.below == "c" and raw.above_s == pytest.approx((5.3 - 3.7) * US, rel=1e-2)
    assert raw.above_s == raw.above_floor_s
    assert rows[("c", 4)].above_floor_s is None
    assert rows[("cupy_raw_stream", 4)].graph_s is None  # its graph is cupy_raw's
    assert rows[("gpu", None)].gpu_node_s == pytest.approx(0.5 * US) and rows[("gpu", None)].skipped is None
    assert rows[("torch", None)].skipped == "torch is not installed (No module named 'torch')"


def test_a_skipped_layer_falls_through_to_the_measured_one_below():
    record = recorded_run()
    record = record.model_copy(update={"cases": [c for c in record.cases if c.chain != "bindings"]})
    raw = next(r for r in floor_report(record).rows if (r.layer, r.args) == ("cupy_raw", 4))
    assert raw.below == "c" and raw.above_s == pytest.approx((5.3 - 3.7) * US, rel=1e-2)


def test_the_markdown_report_holds_the_table_and_the_host_facts():
    text = render_markdown(floor_report(recorded_run()))
    assert "| bindings | 4 | 4.90 | 1.10 | 1.10 | 23% | c | 1.49 | 3.42 | 4.88 |" in text
    assert "| cupy_ufunc | — | 9.04 | 5.32 | 3.72 | 41% | cupy_raw |" in text
    assert "| torch | — | skipped: torch is not installed (No module named 'torch') |" in text
    assert "| gpu | — | — | — | — | — | — | 0.50 (GPU/node) | — | — |" in text
    assert (
        "Call path: c → bindings · c → cupy_raw → cupy_raw_stream, cupy_elementwise, cupy_ufunc · c → torch."
        in text
    )
    assert "bindings, cupy_raw and torch are siblings over the C floor" in text
    assert (
        "CPU: Intel Xeon Platinum 8480+; the launching thread on CPU 3 (3100 MHz, governor performance, NUMA node 0, SMT on: siblings 3,67)"
        in text
    )
    assert "GPU: NVIDIA H200, driver 580.95, NUMA node 1" in text


def test_host_facts_the_host_does_not_expose_are_said_so():
    """The H200 VM: no cpufreq (no governor) and the GPU's sysfs numa_node -1 (read as None)."""
    bare = HostData(pid=1, start=ThreadPlace(cpu=15, mhz=2100.0, node=0, siblings="15"))
    assert bare.start is not None
    host = HostFacts(
        cpu_model="Xeon", places=(("c", bare.start),), gpu_node=None, kernel="6.18", driver="580", gpu="H200"
    )
    lines = host_lines(host)
    assert lines[0] == "- GPU: H200, driver 580, NUMA node not exposed by this host"
    assert "governor not exposed by this host, NUMA node 0, SMT off: siblings 15" in lines[1]
    assert "unknown" not in " ".join(lines)


def test_layers_whose_processes_ran_on_different_cpus_say_each_cpu():
    """A process per layer: each group of layers with the CPU its launching threads ran on (the H200 run
    of results/floor-h200/per-layer/walls/1-layer put c on CPU 4, torch on 15, the others on 2)."""

    def on(cpu: int) -> ThreadPlace:
        return ThreadPlace(cpu=cpu, mhz=2100.0, node=0, siblings=str(cpu))

    places = (("c", on(4)), ("bindings", on(2)), ("cupy_raw", on(2)), ("torch", on(15)), ("gpu", on(2)))
    line = host_lines(HostFacts("Xeon", places, None, None, None, None))[1]
    assert line == (
        "- CPU: Xeon; the launching threads by layer (the layers' processes ran on different CPUs): "
        "c on CPU 4 (2100 MHz, governor not exposed by this host, NUMA node 0, SMT off: siblings 4); "
        "bindings, cupy_raw and gpu on CPU 2 (2100 MHz, governor not exposed by this host, NUMA node 0, "
        "SMT off: siblings 2); torch on CPU 15 (2100 MHz, governor not exposed by this host, NUMA node 0, "
        "SMT off: siblings 15)"
    )
    record = load_run(ROOT / "results" / "floor-h200" / "per-layer" / "walls" / "1-layer")
    assert "c on CPU 4 (" in host_lines(floor_report(record).host)[1]


def test_a_negative_step_over_the_parent_is_said_to_be_below_it():
    record = recorded_run()
    cases = [c for c in record.cases if c.chain != "cupy_raw_stream"]
    faster = case_result(
        FloorRequest(Floor(), built_in_scenario(Floor()), MeasureSettings()),
        plan(Floor(layers=["cupy_raw_stream"], args=[4]))[0],
        LayerWorkloads({}, 1),
        None,
        SamplingOutcome({"cupy_raw_stream/args=4|eager": _samples(5.0 * US)}, False, 0.0, None, ()),
        HOST,
    )
    text = render_markdown(floor_report(record.model_copy(update={"cases": [*cases, faster]})))
    assert "| cupy_raw_stream | 4 | 5.02 | 1.23 | -0.38 (below its parent) | -8% | cupy_raw |" in text


def test_the_figure_is_drawn_and_left_out_when_nothing_was_measured(tmp_path):
    report = floor_report(recorded_run())
    path = draw_floor_figure(report, tmp_path)
    assert path == tmp_path / "floor.png" and path.stat().st_size > 10_000
    empty = floor_report(recorded_run().model_copy(update={"cases": []}))
    assert draw_floor_figure(empty, tmp_path / "none") is None


def test_the_run_is_stored_and_read_back_with_its_skip_reasons(tmp_path):
    record = recorded_run()
    write_run(tmp_path, record)
    write_tables(tmp_path, record)
    again = load_run(tmp_path)
    torch = next(c for c in again.cases if c.case_id == "torch")
    assert {m.status for m in torch.modes.values()} == {"skipped"}
    assert torch.modes["eager"].reason == "torch is not installed (No module named 'torch')"
    gpu = next(c for c in again.cases if c.case_id == "gpu")
    assert gpu.modes["eager"].reason == "why absent" and gpu.modes["graph"].status == "ok"
    csv = (tmp_path / "results.csv").read_text()
    assert "bindings/args=16" in csv and "torch is not installed" in csv
    assert floor_report(again).rows == floor_report(record).rows


def test_compare_reads_a_floor_run(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        write_run(tmp_path / name, recorded_run())
    result = CliRunner().invoke(cli, ["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "bindings/args=16" in result.output


def test_compare_notes_floor_rows_measured_in_another_process_layout(tmp_path):
    """The H200's floor runs of both layouts (results/floor-h200/per-layer/walls): compare and a gate say
    that the layout differs, read from the processes that measured the layers; one layout says nothing."""
    from launchbench.analysis.coverage import floor_layouts

    walls = ROOT / "results" / "floor-h200" / "per-layer" / "walls"
    assert floor_layouts(load_run(walls / "1-layer")) == {"floor": "layer"}
    assert floor_layouts(load_run(walls / "2-shared")) == {"floor": "shared"}
    assert floor_layouts(recorded_run()) == {"floor": "shared"}  # every layer's pass: pid 1
    said = "the floor layers of scenario 'floor' were measured every layer but torch in one process in the "
    said += "baseline and each layer"
    runner = CliRunner()
    result = runner.invoke(cli, ["compare", str(walls / "2-shared"), str(walls / "1-layer"), "-q"])
    assert said in result.stderr, result.output
    gated = [str(walls / "2-shared"), str(walls / "1-layer"), "--fail-on", "wall_us_per_launch:50%"]
    result = runner.invoke(cli, ["compare", *gated, "--format", "markdown"])
    assert said in result.stdout, result.output
    result = runner.invoke(cli, ["compare", str(walls / "1-layer"), str(walls / "3-layer"), "-q"])
    assert "floor layers were measured" not in result.output


def test_floor_without_a_gpu_refuses_in_one_line(tmp_path):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here")
    result = CliRunner().invoke(cli, ["floor", "-d", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "CuPy is not installed" in result.output
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").iterdir())


def test_floor_refuses_a_scenario_without_a_floor_block(tmp_path):
    result = CliRunner().invoke(
        cli, ["floor", str(ROOT / "scenarios" / "quickstart.yaml"), "-d", str(tmp_path / "r")]
    )
    assert result.exit_code == 2
    assert "quickstart.yaml: reading the scenario: it has no 'floor:' block to measure" in result.output


@pytest.mark.parametrize("script", ["bare_layers.py", "torch_process_probe.py"])
def test_the_bare_loops_import_nothing_of_launchbench(script):
    tree = ast.parse((ROOT / "benchmarks" / "floor_reference" / script).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.startswith("launchbench")]


@pytest.fixture
def fidelity_script():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("floor_fidelity")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_the_fidelity_script_pairs_layers_and_references(fidelity_script, tmp_path):
    launch = "\n".join(
        json.dumps({"layer": "c", "method": m, "args": 4, "nodes": 1, "us_per_launch": v})
        for m, v in (("cuLaunchKernel", 3.7), ("cuGraphLaunch", 1.1), ("triple_chevron", 3.6))
    )
    bare = json.dumps({"layer": "bindings", "mode": "eager", "args": 4, "us_per_launch": 5.0})
    refs = fidelity_script.parse_reference(launch + "\nnoise\n" + bare)
    assert refs[("c", "eager", 4)] == [3.7] and refs[("c", "chevron", 4)] == [3.6]
    write_run(tmp_path, recorded_run())
    ours = fidelity_script.launchbench_values(tmp_path, stretches=2)
    assert ours[("gpu", "graph", None)] == pytest.approx([0.5, 0.5])
    assert ("gpu", "eager", None) not in ours and ("torch", "eager", None) not in ours  # skipped
    rows = fidelity_script.fidelity(ours, refs)
    levels = [r for r in rows if not r.decides]
    eager = next(r for r in levels if (r.layer, r.mode, r.args) == ("c", "eager", 4))
    assert eager.level == "one" and eager.reference == "launch.cu cuLaunchKernel"
    assert eager.ratio == pytest.approx(3.78 * 1.0045 / 3.7, rel=2e-3) and eager.within
    binding = next(r for r in levels if r.layer == "bindings")
    assert binding.reference == "bare_layers.py bindings" and binding.within
    graph = next(r for r in levels if (r.layer, r.mode) == ("c", "graph"))
    assert graph.within is False  # 1.18 against 1.1: 7% off
    floor = next(r for r in rows if r.decides and (r.layer, r.mode, r.args) == ("c", "graph", 4))
    assert floor.level == "floor" and floor.within is None  # one reference value: too few to decide
    assert "chevron" not in {r.mode for r in rows}  # <<<>>> is printed beside, never compared


def _recorded_fidelity(fidelity_script):
    payload = json.loads((ROOT / "tests" / "data" / "floor_fidelity_h200.json").read_text())
    ours = fidelity_script.load_values(payload["launchbench"])
    refs = fidelity_script.load_values(payload["references"])
    rows = fidelity_script.fidelity(ours, refs)
    return ours, refs, {(r.layer, r.mode, r.args, r.level): r for r in rows}


def test_the_fidelity_compares_level_to_level_on_the_recorded_h200_numbers(fidelity_script):
    """The H200's rounds: a process (and a stretch of one) sits at a low or a high level; pooled medians
    mixed them (bindings at 16 args read 1.44x its bare loop), level to level they agree."""
    ours, refs, rows = _recorded_fidelity(fidelity_script)
    pooled = statistics.median(ours[("bindings", "eager", 16)]) / statistics.median(
        refs[("bindings", "eager", 16)]
    )
    assert pooled > 1.3
    high = rows[("bindings", "eager", 16, "high")]
    assert high.ratio == pytest.approx(0.985, abs=1e-3) and high.within
    low, high = rows[("c", "graph", 0, "low")], rows[("c", "graph", 0, "high")]
    assert (low.launchbench_us, low.reference_us) == pytest.approx((1.329, 1.326), abs=1e-3) and low.within
    assert high.ratio == pytest.approx(1.019, abs=1e-3) and high.within
    assert rows[("cupy_raw", "eager", 0, "low")].within and not rows[("cupy_raw", "eager", 0, "high")].within
    assert rows[("gpu", "graph", None, "one")].within


def test_a_level_one_side_never_reached_is_reported_not_compared(fidelity_script):
    _, _, rows = _recorded_fidelity(fidelity_script)
    # launchbench's c graph at 4 args: 9 stretches at ~1.92 µs and 3 at ~1.31; launch.cu's 3 processes all at ~1.91
    matched, unmatched = rows[("c", "graph", 4, "high")], rows[("c", "graph", 4, "unmatched")]
    assert matched.within and (matched.launchbench_n, matched.reference_n) == (9, 3)
    assert unmatched.within is None and unmatched.launchbench_us == pytest.approx(1.309, abs=1e-3)
    text = fidelity_script.render(list(rows.values()), *_recorded_fidelity(fidelity_script)[:2], "shared")
    assert (
        "| c | graph | 4 | unmatched | launch.cu cuGraphLaunch | 1.309 | 1.913 | 0.684 | 3 / 3 | not compared |"
        in text
    )
    assert "each Python layer against `bare_layers.py LAYER`" in text and "| c | <<<>>> | 16 |" in text


def test_plot_and_history_read_a_floor_run(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    write_run(run, recorded_run())
    write_tables(run, recorded_run())
    plotted = CliRunner().invoke(cli, ["plot", str(run), "-d", str(tmp_path / "plots"), "--dpi", "40"])
    assert plotted.exit_code == 0, plotted.output
    assert (tmp_path / "plots" / "wall_per_launch_vs_chain_length.png").is_file()
    assert (tmp_path / "plots" / "floor.png").is_file() and str(
        tmp_path / "plots" / "floor.png"
    ) in plotted.output
    db = f"sqlite:///{tmp_path / 'history.db'}"
    ingested = CliRunner().invoke(cli, ["history", "ingest", str(run), "--db", db])
    assert ingested.exit_code == 0, ingested.output
    listed = CliRunner().invoke(cli, ["history", "list", "--db", db, "--format", "json"])
    assert listed.exit_code == 0 and '"floor"' in listed.output


def _fake_floor(requests):
    """A floor measurement of recorded numbers (no GPU), remembering what it was asked."""

    def measure(request, gpu_address):
        requests.append((request, gpu_address))
        wanted = {case.case_id for case in plan(request.spec)}
        return [
            case.model_copy(update={"scenario": request.scenario.name})
            for case in recorded_run().cases
            if case.case_id in wanted
        ]

    return measure


def test_run_of_a_scenario_with_a_floor_block_measures_its_layers_as_cases(tmp_path):
    from fakes import scripted_backend

    from launchbench.run import runner

    scenario = _scenario(tmp_path, "  layers: [c, bindings]\n  args: [0, 4]\n  max_time: 3\n")
    requests: list = []
    options = runner.RunOptions(
        overrides=Overrides(passes=2),
        isolate=False,
        backend_factory=scripted_backend,
        write_tables=write_tables,
        floor=_fake_floor(requests),
    )
    record = runner.run(runner.plan([scenario], Overrides(passes=2)), tmp_path / "run", options)
    ((request, _address),) = requests
    assert request.spec == Floor(layers=["c", "bindings"], args=[0, 4], max_time=3)
    assert request.measure.passes == 2 and request.scenario.name == "f"  # the command line's overrides
    floor_ids = [c.case_id for c in record.cases if c.kinds == "floor"]
    assert floor_ids == ["c/args=0", "c/args=4", "bindings/args=0", "bindings/args=4"]
    assert record.status == "complete" and any(c.kinds != "floor" for c in record.cases)
    csv = (tmp_path / "run" / "results.csv").read_text()
    assert "c/args=4" in csv and "bindings/args=0" in csv
    rows = floor_report(load_run(tmp_path / "run")).rows
    assert [(r.layer, r.args) for r in rows] == [("c", 0), ("c", 4), ("bindings", 0), ("bindings", 4)]
    from rich.console import Console

    from launchbench.report.console import print_summary

    console = Console(record=True, width=200)
    print_summary(console, record, tmp_path / "run")  # the run's summary holds the floor cases too
    assert "bindings/args=4" in console.export_text()


def test_a_resumed_run_keeps_the_floor_cases_it_holds(tmp_path):
    from launchbench.run.floor import FloorRequest, with_floors

    requests: list = []
    spec = Floor(layers=["c"], args=[0])
    request = FloorRequest(spec, built_in_scenario(spec), MeasureSettings())
    once = with_floors(
        recorded_run().model_copy(update={"cases": []}), [request], _fake_floor(requests), None
    )
    again = with_floors(once, [request], _fake_floor(requests), None)
    assert [c.case_id for c in again.cases] == ["c/args=0"] and len(requests) == 1


def test_the_fidelity_script_reanalyses_a_recorded_fidelity_json(tmp_path):
    import subprocess

    shutil.copy(ROOT / "tests" / "data" / "floor_fidelity_h200.json", tmp_path / "fidelity.json")
    script = ROOT / "benchmarks" / "floor_fidelity.py"
    done = subprocess.run(
        [sys.executable, str(script), "--reanalyse", "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert done.returncode == 1, done.stderr  # some levels are more than 5% apart on the recorded numbers
    assert (
        "| c | graph | 0 | low | launch.cu cuGraphLaunch | 1.329 | 1.326 | 1.003 | 4 / 1 | yes |"
        in done.stdout
    )
    again = json.loads((tmp_path / "fidelity.json").read_text())
    assert again["launchbench"]["c|graph|0"][:2] == [1.9705, 1.9322] and again["rows"]
    assert (
        (tmp_path / "fidelity.md").read_text().startswith("# launchbench floor against standalone references")
    )


def test_a_layer_whose_own_process_fails_is_failed_with_that_process_s_last_words():
    """torch's layer is measured in a process of its own; where that process ends without results
    (here: no CuPy, or no GPU 99), its cases are failed with one line that says so, and the run goes on."""
    request = FloorRequest(
        Floor(layers=["torch"], max_time=1), built_in_scenario(Floor()), MeasureSettings(), 99
    )
    cases = plan(request.spec)
    results = measure_apart(request, cases, None, request.spec.max_time)
    assert list(results) == cases
    for result in results.values():
        assert result.error is not None and result.error.startswith("the torch layer's process: ")
        said = result.error.removeprefix("the torch layer's process: ")
        assert "\n" not in said and ("cupy" in said.lower() or "device" in said.lower()), said
        assert {m.status for m in result.modes.values()} == {"failed"}
