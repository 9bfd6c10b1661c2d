"""GPU tests of the torch step kind and the torch_graph mode (`pytest -m gpu tests/kinds/test_torch_gpu.py`):
a decode step of scenarios/decode_torch.yaml in all three modes with outputs matched, its natural-style
chain (graph refused, torch_graph holding pool memory), a run that
allocates per call (never a fast CuPy graph), a run that synchronizes (refused by both captures, with
torch's reason), and a torch step beside a CuPy kernel. They skip with a reason without torch or a GPU."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import pytest

from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
if str(SCENARIOS) not in sys.path:
    sys.path.insert(0, str(SCENARIOS))
MEASURED = ("ok", "budget")


@pytest.fixture(scope="module")
def torch():
    module = pytest.importorskip("torch", reason="torch is not installed (pip install 'launchbench[torch]')")
    if not module.cuda.is_available():
        pytest.skip(f"torch {module.__version__} sees no CUDA device")
    return module


def fast(case, max_time: float = 0.4):
    update = {"max_time": max_time, "passes": 1, "min_samples": 3, "warmup_time": 0.02}
    return dataclasses.replace(case, measure=case.measure.model_copy(update=update))


def run_case(backend, case):
    from launchbench.run.execute import execute_case

    return execute_case(backend, fast(case), backend.clock)


def run_user_chain(backend, tmp_path: Path, steps: str):
    """The one case of a chain of ``steps`` (YAML flow lists) whose torch steps call USER_CODE."""
    (tmp_path / "lb_torch_user.py").write_text(textwrap.dedent(USER_CODE), encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text(f"name: t\ndescription: torch steps\nchains:\n  user: {steps}\n", encoding="utf-8")
    (case,) = expand_scenario(path)
    return run_case(backend, case)


def decode_case(chain: str, batch: int):
    cases = expand_scenario(SCENARIOS / "decode_torch.yaml")
    return next(c for c in cases if c.chain == chain and c.params["batch"] == batch)


@pytest.mark.parametrize("batch", [1, 64])
def test_decode_step_in_all_three_modes(backend, torch, batch):
    result = run_case(backend, decode_case("decode", batch))
    assert result.error is None, result.error
    assert set(result.modes) == {"eager", "graph", "torch_graph"}
    eager, graph, graphed = (result.modes[m] for m in ("eager", "graph", "torch_graph"))
    assert eager.status in MEASURED, eager.reason
    assert graphed.status in MEASURED, graphed.reason
    life = graphed.lifecycle
    assert life is not None and life.capture_s > 0 and life.first_launch_s > 0
    assert life.mem_bytes is not None and life.pool_bytes is not None
    print(f"batch {batch}: {result.check_detail}")
    print(f"  torch_graph life: {life.model_dump()}")
    print(
        f"  graph: {graph.status} {graph.reason or ''} {graph.lifecycle.model_dump() if graph.lifecycle else ''}"
    )
    assert result.outputs_match is True, result.check_detail
    assert graph.status in (*MEASURED, "not_capturable"), graph.reason
    if graph.status == "not_capturable":
        assert graph.reason, "a refused CuPy capture must say why"


USER_CODE = """\
    def allocating(torch, device, stream, n):
        x = torch.ones(n, device=device)
        y = torch.zeros(n, device=device)
        def run():
            y.copy_(x * 2 + 1)  # x * 2 and + 1 allocate new tensors every call
        return {"run": run, "outputs": {"y": y}}

    def syncing(torch, device, stream, n):
        x = torch.ones(n, device=device)
        y = torch.zeros(n, device=device)
        def run():
            y.add_(x)
            if float(y[0]) < 0:  # reads the device: a synchronize
                y.zero_()
        return {"run": run, "outputs": {"y": y}}

    def in_place(torch, device, stream, n):
        x = torch.ones(n, device=device)
        y = torch.zeros(n, device=device)
        def run():
            torch.mul(x, 2, out=y)
            y.add_(1)
        return {"run": run, "outputs": {"y": y}}
    """


def test_allocating_run_is_never_a_fast_cupy_graph(backend, torch, tmp_path):
    steps = '[{kind: torch, callable: "lb_torch_user:allocating", args: {n: 100000}, launches: 3}]'
    result = run_user_chain(backend, tmp_path, steps)
    graph = result.modes["graph"]
    assert graph.status == "not_capturable", (graph.status, graph.reason)
    assert "allocates" in (graph.reason or "") and "torch_graph" in (graph.reason or ""), graph.reason
    graphed = result.modes["torch_graph"]  # torch's own capture keeps the temporaries in its private pool
    assert graphed.status in (*MEASURED, "failed"), graphed.reason
    if graphed.status in MEASURED:
        assert result.outputs_match is True, result.check_detail
        assert graphed.lifecycle is not None and (graphed.lifecycle.pool_bytes or 0) > 0
    print(f"allocating: graph: {graph.reason}; torch_graph: {graphed.status}; {result.check_detail}")


def test_synchronizing_run_fails_both_captures_with_a_reason(backend, torch, tmp_path):
    steps = '[{kind: torch, callable: "lb_torch_user:syncing", args: {n: 1000}, launches: 2}]'
    result = run_user_chain(backend, tmp_path, steps)
    assert result.modes["eager"].status in MEASURED
    for mode in ("graph", "torch_graph"):
        status, reason = result.modes[mode].status, result.modes[mode].reason
        print(f"syncing: {mode}: {status}: {reason}")
        assert status == "not_capturable", (mode, status, reason)
        assert reason and "\n" not in reason and "Traceback" not in reason, reason
    # the failed captures were ended: the backend's stream is usable by the next case
    assert not backend.stream(0).is_capturing()
    assert result.modes["eager"].status in MEASURED


def test_in_place_torch_step_beside_a_cupy_kernel(backend, torch, tmp_path):
    steps = '[{kind: torch, callable: "lb_torch_user:in_place", args: {n: 100000}, launches: 2}, {kind: axpy, size: 4096}]'
    result = run_user_chain(backend, tmp_path, steps)
    assert result.error is None, result.error
    for mode in ("eager", "graph", "torch_graph"):
        assert result.modes[mode].status in MEASURED, (mode, result.modes[mode].reason)
    assert result.outputs_match is True, result.check_detail
    assert result.modes["graph"].lifecycle.nodes >= 3
    graph_wall = min(result.modes["graph"].samples["wall_s_per_iter"])
    print(f"mixed: graph {graph_wall * 1e6:.2f} µs/iter; {result.check_detail}")


@pytest.mark.parametrize("batch", [1, 256])
def test_natural_decode_step_holds_pool_memory_in_torch_graph(backend, torch, batch):
    result = run_case(backend, decode_case("decode_natural", batch))
    assert result.error is None, result.error
    graph, graphed = result.modes["graph"], result.modes["torch_graph"]
    assert graph.status == "not_capturable" and "allocates" in (graph.reason or ""), graph.reason
    assert graphed.status in MEASURED, graphed.reason
    life = graphed.lifecycle
    assert life is not None and (life.pool_bytes or 0) > 0, life
    assert result.outputs_match is True, result.check_detail
    print(
        f"natural batch {batch}: torch_graph mem {life.mem_bytes} B, pool {life.pool_bytes} B; {result.check_detail}"
    )
