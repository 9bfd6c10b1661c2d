"""The torch step kind, the torch_graph mode and the capture table on the CPU: torch scenarios validate
without importing torch, a run without torch is refused in one line, torch_graph rows carry the capture
columns, and the capture table's maths on a run of fixed numbers."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter, ValidationError

from launchbench import __version__
from launchbench.analysis.columns import COLUMNS
from launchbench.analysis.table import HostLevels, Placement, case_rows, run_table
from launchbench.backend.base import KeepsModeGraphs, OutputCheck
from launchbench.backend.check import combine_checks
from launchbench.cli import cli
from launchbench.kinds import registry
from launchbench.kinds.python_call import ArrayRule, PythonStepError, normalise_result
from launchbench.kinds.torch_step import TorchStep, allocation_refusal, holds_torch
from launchbench.report.capture_table import TABLE_COLUMNS, capture_table, markdown
from launchbench.results.schema import (
    CPU,
    GPU,
    LATENCY,
    WALL,
    CaseResult,
    GraphLifecycle,
    ModeResult,
    RunRecord,
    ScenarioInfo,
)
from launchbench.results.store import load_run, write_run
from launchbench.run.execute import case_modes, mode_graph
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import Step

ROOT = Path(__file__).resolve().parents[2]
DECODE = ROOT / "scenarios" / "decode_torch.yaml"
STEP = TypeAdapter(Step)

# --- the kind -----------------------------------------------------------------------------------------


def test_torch_step_model_and_spec() -> None:
    step = STEP.validate_python(
        {"kind": "torch", "callable": "work.decode:step", "launches": 39, "repeat": 2}
    )
    assert isinstance(step, TorchStep) and step.launches() == 78
    spec = registry.spec_of(step)
    assert spec.requires == ("torch",) and spec.nodes_per_launch is None and not spec.takes_stream
    assert spec.model.__doc__ and spec.model.model_fields["callable"].description
    for name in ("torch", "device", "stream"):
        with pytest.raises(ValidationError, match="passed by launchbench itself"):
            STEP.validate_python({"kind": "torch", "callable": "m:f", "args": {name: 1}})
    with pytest.raises(ValidationError, match="module:function"):
        STEP.validate_python({"kind": "torch", "callable": "not a callable"})
    python = STEP.validate_python({"kind": "python", "callable": "m:f", "args": {"device": 1}})
    assert python.args == {"device": 1}  # only the torch kind passes `device` itself


def test_torch_scenario_cases_hold_the_torch_graph_mode() -> None:
    cases = expand_scenario(DECODE)
    sizes = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert [(c.chain, c.params["batch"]) for c in cases] == [("decode", b) for b in sizes] + [
        ("decode_natural", b) for b in sizes
    ]
    assert {c.chain: c.launches_per_iter for c in cases} == {"decode": 39, "decode_natural": 20}
    assert case_modes(cases[0]) == ("eager", "graph", "torch_graph")
    quickstart = expand_scenario(ROOT / "scenarios" / "quickstart.yaml")[0]
    assert case_modes(quickstart) == ("eager", "graph") and not holds_torch(quickstart.steps)


HIDE_TORCH = """
import sys, importlib.abc
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch imported during validation")
sys.meta_path.insert(0, Refuse())
from click.testing import CliRunner
from launchbench.cli import cli
result = CliRunner().invoke(cli, ["validate", sys.argv[1]])
print(result.output)
assert result.exit_code == 0, result.output
assert not any(m == "torch" or m.startswith("torch.") for m in sys.modules)
print("no torch")
"""


def test_torch_scenarios_validate_without_importing_torch() -> None:
    done = subprocess.run(
        [sys.executable, "-c", HIDE_TORCH, str(DECODE)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "18 cases" in done.stdout and "no torch" in done.stdout


def test_a_torch_run_without_torch_exits_2_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a, **k: None if name == "torch" else real(name, *a, **k)
    )
    result = CliRunner().invoke(cli, ["run", str(DECODE), "-d", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output
    assert str(DECODE) in lines[0] and "reading" in lines[0] and "torch" in lines[0] and "[torch]" in lines[0]
    assert not (tmp_path / "run").exists()


def test_torch_outputs_are_checked_against_the_kind_rule() -> None:
    class Tensor:
        pass

    rule = ArrayRule(lambda value: isinstance(value, Tensor), "a CUDA tensor")
    work = normalise_result(
        {"run": lambda: None, "outputs": {"y": Tensor()}}, "m:f", "s.yaml", None, rule, "torch"
    )
    assert list(work.outputs) == ["y"]
    with pytest.raises(
        PythonStepError, match=r"s.yaml: torch step 'm:f': output 'y' is a list; expected a CUDA tensor"
    ):
        normalise_result({"run": lambda: None, "outputs": {"y": []}}, "m:f", "s.yaml", None, rule, "torch")


def test_an_allocating_run_is_refused_by_cupys_capture_with_the_reason() -> None:
    assert allocation_refusal(0, "s.yaml: torch step 'm:f'") is None
    reason = allocation_refusal(2, "s.yaml: torch step 'm:f'")
    assert reason is not None and reason.startswith("s.yaml: torch step 'm:f': run allocates 2 tensor(s)")
    assert "graph-safe only in a capture torch began" in reason and "torch_graph" in reason


# --- checks and per-mode life cycles ---------------------------------------------------------------


def test_combined_checks_name_the_failing_graph_mode() -> None:
    same = OutputCheck(True, "1 buffer(s), 4 bytes identical")
    differs = OutputCheck(False, "graph output differs from eager: y: 1 of 4 elements differ")
    refused = OutputCheck(None, "no graph to compare (run allocates)")
    assert combine_checks(same, {"torch_graph": same}, True) == OutputCheck(
        True, "graph: 1 buffer(s), 4 bytes identical; torch_graph: 1 buffer(s), 4 bytes identical"
    )
    torch_only = combine_checks(same, {"torch_graph": differs}, True)
    assert torch_only.match is False and torch_only.failed_modes == ("torch_graph",)
    both = combine_checks(differs, {"torch_graph": differs}, True)
    assert both.failed_modes == ("graph", "torch_graph")
    not_measured = combine_checks(refused, {"torch_graph": same}, graph_measured=False)
    assert not_measured.match is True and "no graph to compare" in not_measured.detail
    assert combine_checks(refused, {"torch_graph": refused}, False).match is None


def _life(capture: float, mem: int, pool: int | None) -> GraphLifecycle:
    return GraphLifecycle(
        split=True,
        capture_s=capture,
        instantiate_s=capture / 2,
        upload_s=0.0,
        first_launch_s=1e-4,
        nodes=39,
        mem_bytes=mem,
        pool_bytes=pool,
    )


def test_mode_graph_reads_per_mode_records_where_the_case_keeps_them() -> None:
    cupy_life, torch_life = _life(1e-3, 0, 0), _life(2e-3, 2 << 20, 2 << 20)
    plain = SimpleNamespace(lifecycle=cupy_life, graph_failure=None)
    assert mode_graph(plain, "graph") == (cupy_life, None)
    assert mode_graph(plain, "eager") == (None, None)
    torch_case = SimpleNamespace(
        lifecycle=None,
        graph_failure="run allocates 2 tensor(s)",
        mode_lifecycles={"torch_graph": torch_life},
        mode_failures={},
    )
    assert isinstance(torch_case, KeepsModeGraphs) and not isinstance(plain, KeepsModeGraphs)
    assert mode_graph(torch_case, "graph") == (None, "run allocates 2 tensor(s)")
    assert mode_graph(torch_case, "torch_graph") == (torch_life, "run allocates 2 tensor(s)")


# --- a run of fixed numbers: three batch sizes, the CuPy graph refused at the largest ---------------

# batch → eager, graph, torch_graph wall µs per step; capture µs of graph and torch_graph; bytes
STEPS = {1: (400.0, 60.0, 70.0), 8: (410.0, 80.0, 85.0), 64: (420.0, None, 200.0)}
CAPTURE = {1: (3000.0, 5000.0), 8: (3200.0, 5200.0), 64: (None, 6000.0)}
MEMORY = {1: (1 << 20, 2 << 20), 8: (1 << 20, 4 << 20), 64: (None, 8 << 20)}


def _mode(mode: str, wall_us: float, life: GraphLifecycle | None) -> ModeResult:
    seconds = [wall_us * 1e-6] * 5
    samples = {WALL: seconds, CPU: seconds, GPU: seconds, LATENCY: [s + 1e-5 for s in seconds]}
    return ModeResult.pooled(
        mode=mode, status="ok", iters_per_sample=10, samples=samples, target_met=True, lifecycle=life
    )


def _case(batch: int) -> CaseResult:
    eager, graph, graphed = STEPS[batch]
    (graph_capture, torch_capture), (graph_mem, torch_mem) = CAPTURE[batch], MEMORY[batch]
    modes = {"eager": _mode("eager", eager, None)}
    if graph is None:
        modes["graph"] = ModeResult(mode="graph", status="not_capturable", reason="run allocates 3 tensor(s)")
    else:
        modes["graph"] = _mode("graph", graph, _life(graph_capture * 1e-6 / 1.5, graph_mem, 0))
    modes["torch_graph"] = _mode(
        "torch_graph", graphed, _life(torch_capture * 1e-6 / 1.5, torch_mem, torch_mem)
    )
    return CaseResult(
        scenario="decode_torch",
        case_id=f"decode/batch={batch}",
        chain="decode",
        kinds="torch",
        params={"batch": batch},
        launches_per_iter=39,
        modes=modes,
        outputs_match=True,
        elapsed_s=1.0,
    )


def torch_run() -> RunRecord:
    return RunRecord(
        launchbench_version=__version__,
        status="complete",
        started="2026-12-01T14:00:00+00:00",
        finished="2026-12-01T14:01:00+00:00",
        environment={"gpu": {"name": "NVIDIA H200", "index": 0}},
        scenarios=[ScenarioInfo(name="decode_torch", description="fixed", file=str(DECODE), sha256="0" * 64)],
        cases=[_case(batch) for batch in STEPS],
    )


def test_torch_graph_rows_carry_the_capture_columns_and_survive_the_file(tmp_path: Path) -> None:
    run = torch_run()
    assert {"graph_pool_bytes", "graph_mem_bytes", "capture_us", "instantiate_us"} <= set(COLUMNS)
    rows = {row["mode"]: row for row in case_rows(run.cases[0], Placement("NVIDIA H200"))}
    torch_row = rows["torch_graph"]
    assert torch_row["capture_us"] == pytest.approx(5000 / 1.5)
    assert torch_row["instantiate_us"] == pytest.approx(2500 / 1.5)
    assert torch_row["setup_us"] == pytest.approx(5000.0)
    assert torch_row["graph_mem_bytes"] == torch_row["graph_pool_bytes"] == 2 << 20
    assert torch_row["speedup"] == pytest.approx(400 / 70)
    assert torch_row["break_even_iters"] == pytest.approx(5000 / 330)
    assert rows["graph"]["graph_pool_bytes"] == 0 and rows["eager"]["graph_pool_bytes"] is None
    write_run(tmp_path, run)
    again = load_run(tmp_path)
    assert again.cases[0].modes["torch_graph"].lifecycle.pool_bytes == 2 << 20
    assert run_table(again)["graph_pool_bytes"].notna().sum() == 5


def test_a_lifecycle_without_pool_bytes_reads_and_writes_as_before() -> None:
    life = _life(1e-3, 0, None)
    assert "pool_bytes" not in life.model_dump(mode="json", exclude_none=False)
    assert GraphLifecycle.model_validate({k: v for k, v in life.model_dump().items()}).pool_bytes is None


def test_the_capture_table_per_size_and_cumulative() -> None:
    table = capture_table(run_table(torch_run(), levels=HostLevels.SKIP))
    assert list(table.columns) == list(TABLE_COLUMNS)
    graphed = table[table["mode"] == "torch_graph"].set_index("size")
    assert list(graphed.index) == [1, 8, 64]
    assert list(graphed["eager_us_per_step"]) == pytest.approx([400, 410, 420])
    assert list(graphed["graph_us_per_step"]) == pytest.approx([70, 85, 200])
    assert list(graphed["setup_us"]) == pytest.approx([5000, 5200, 6000])
    assert list(graphed["cumulative_setup_s"]) == pytest.approx([5e-3, 10.2e-3, 16.2e-3])
    assert list(graphed["cumulative_mem_bytes"]) == [2 << 20, 6 << 20, 14 << 20]
    assert list(graphed["break_even_steps"]) == pytest.approx([5000 / 330, 5200 / 325, 6000 / 220])
    graph = table[table["mode"] == "graph"].set_index("size")
    assert graph.loc[64, "status"] == "not_capturable" and "allocates" in graph.loc[64, "reason"]
    assert math.isnan(graph.loc[64, "graph_us_per_step"]) and math.isnan(graph.loc[64, "break_even_steps"])
    assert list(graph["captured"]) == [1, 2, 2]  # the refused size adds nothing to the sums
    assert list(graph["cumulative_setup_s"]) == pytest.approx([3e-3, 6.2e-3, 6.2e-3])
    text = markdown(table)
    assert "### decode_torch: decode, torch_graph" in text and "not_capturable: run allocates" in text


def test_break_even_is_empty_where_the_graph_is_not_faster() -> None:
    table = run_table(torch_run(), levels=HostLevels.SKIP)
    slow = table.copy()
    slow.loc[slow["mode"] == "torch_graph", "wall_us_per_iter"] = 500.0
    rows = capture_table(slow)
    assert rows[rows["mode"] == "torch_graph"]["break_even_steps"].isna().all()


def test_the_capture_table_command(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_run(run_dir, torch_run())
    result = CliRunner().invoke(cli, ["capture-table", str(run_dir)])
    assert result.exit_code == 0, result.output
    out = run_dir / "capture"
    for name in ("capture_table.csv", "capture_table.md", "capture_table.png"):
        assert (out / name).stat().st_size > 0 and str(out / name) in result.output
    assert "| batch |" in result.output
    csv = pd.read_csv(out / "capture_table.csv")
    assert len(csv) == 6 and set(csv["mode"]) == {"graph", "torch_graph"}
    bad = CliRunner().invoke(cli, ["capture-table", str(run_dir), "--axis", "tokens"])
    assert bad.exit_code == 2 and "'tokens'" in bad.output and "batch" in bad.output
    assert len(bad.output.strip().splitlines()) == 1


def test_the_capture_table_figure_is_saved_as_every_figure_is(tmp_path: Path) -> None:
    """style.save_figure's file: an SVG without a date, the same bytes on every rerun."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_run(run_dir, torch_run())
    figures = []
    for out in (tmp_path / "first", tmp_path / "second"):
        result = CliRunner().invoke(cli, ["capture-table", str(run_dir), "-d", str(out), "--format", "svg"])
        assert result.exit_code == 0, result.output
        figures.append((out / "capture_table.svg").read_bytes())
    assert b"<dc:date>" not in figures[0] and figures[0] == figures[1]


def test_the_capture_table_figure_draws_every_mode(tmp_path: Path) -> None:
    from launchbench.report.plots.capture import figure_capture_table

    table = capture_table(run_table(torch_run(), levels=HostLevels.SKIP))
    figure = figure_capture_table(table)
    axes = [ax for ax in figure.axes if ax.get_lines()]
    labels = {line.get_label() for ax in axes for line in ax.get_lines()}
    assert {"eager (kernel by kernel)", "CUDA Graph replay", "torch.cuda.CUDAGraph replay"} <= labels
    assert len(figure.axes) == 5  # four panels and the memory axis
    assert json.dumps(sorted(labels))


def test_docs_name_every_capture_table_column_and_the_kind() -> None:
    torch_doc = (ROOT / "docs" / "torch.md").read_text(encoding="utf-8")
    for column in TABLE_COLUMNS:
        assert f"`{column}`" in torch_doc, column
    scenarios_doc = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert "| `torch` |" in scenarios_doc and "`decode_torch.yaml`" in scenarios_doc


def _table_text(run: RunRecord) -> str:
    import io

    from launchbench.report.console import summary_table
    from launchbench.report.terminal import plain_console

    buffer = io.StringIO()
    plain_console(buffer).print(summary_table(run))
    return buffer.getvalue()


def test_the_summary_table_shows_torch_graph_beside_graph() -> None:
    lines = [line for line in _table_text(torch_run()).splitlines() if "decode/batch=" in line]
    cells = [[cell.strip() for cell in line.strip("│ ").split("│")] for line in lines]
    assert [(c[0], c[1]) for c in cells] == [
        (f"decode/batch={b}", m) for b in STEPS for m in ("graph", "torch_graph")
    ]
    by_mode = {(c[0], c[1]): c for c in cells}
    assert by_mode[("decode/batch=1", "graph")][4] == "1.538"  # 60 µs / 39 launches
    assert by_mode[("decode/batch=1", "torch_graph")][4] == "1.795"  # 70 µs / 39 launches
    assert by_mode[("decode/batch=64", "graph")][4] == "—"  # refused: no number


def test_a_cupy_only_summary_table_has_no_graph_mode_column() -> None:
    from builders import make_run

    text = _table_text(make_run())
    header = next(line for line in text.splitlines() if "case" in line and "launches" in line)
    assert "graph mode" not in header and header.split("┃")[2].strip() == "launches"
    run = make_run()
    assert sum("│" in line for line in text.splitlines()) == len(run.cases)


def test_the_torch_probe_marks_a_moved_reading_and_reports_a_failed_process() -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import torch_probe
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    rows = [
        {"variant": "torch_graph", "batch": 256, "step": "start", "us_per_node": 0.515},
        {"variant": "torch_graph", "batch": 256, "step": "instantiate", "us_per_node": 0.520},
        {"variant": "torch_graph", "batch": 256, "step": "release", "us_per_node": 0.700},
    ]
    lines = torch_probe._table(rows).splitlines()
    assert "moved" not in lines[2] and lines[3].endswith("release  <-- moved") and "+35.9%" in lines[3]
    ended = torch_probe._run_child("no-such-variant", 1)  # the probe goes on and says how it ended
    assert len(ended) == 1 and ended[0]["us_per_node"] is None
    assert "exit 1" in ended[0]["step"] and "unknown variant" in ended[0]["step"]
