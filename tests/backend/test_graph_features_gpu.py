"""GPU tests of the graph features CuPy hides: the conditional WHILE loop against the host loop and the
host reference, memory nodes from MemoryAsyncPool, instantiation with upload, and the drawing of each
shape. Run on a machine with CuPy, cuda-bindings and a CUDA device (`pytest -m gpu`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).parents[2]


def _case(tmp_path: Path, steps: list[dict], **measure):
    path = tmp_path / "s.yaml"
    settings = {"max_time": 0.4, "min_samples": 3, "warmup_time": 0.01, "passes": 1, **measure}
    path.write_text(
        yaml.safe_dump({"name": "s", "description": "x", "chains": {"c": steps}, "measure": settings})
    )
    return expand_scenario(path)[0]


def _needs_conditional_nodes():
    from launchbench.kinds import graph_nodes

    try:
        graph_nodes.require_conditional_nodes()
    except graph_nodes.GraphFeatureUnavailable as err:
        pytest.skip(str(err))


@pytest.mark.parametrize(
    "step",
    [
        {"kind": "while_loop", "size": 65536, "alpha": 0.99, "threshold": 0.55},
        {"kind": "while_loop", "size": 1000, "alpha": 0.5, "threshold": 0, "max_iters": 7, "body": 3},
        {"kind": "while_loop", "size": 4097, "alpha": 0.9, "threshold": 0.01, "dtype": "float64"},
        {"kind": "while_loop", "size": 10, "alpha": 0.5, "threshold": 2.0},  # no pass at all
    ],
)
def test_while_node_computes_what_the_host_loop_and_the_host_compute(backend, tmp_path, step):
    from launchbench.run.execute import execute_case

    _needs_conditional_nodes()
    case = _case(tmp_path, [step, {"kind": "scale", "size": 100}])
    result = execute_case(backend, case, backend.clock)
    assert result.error is None, result.error
    assert result.outputs_match is True, result.check_detail
    assert "host reference" in result.check_detail
    graph = result.modes["graph"]
    assert graph.status in ("ok", "budget"), graph.reason
    assert graph.lifecycle.nodes == 3 + 1  # copy, check, WHILE; the scale kernel
    life = graph.lifecycle
    assert life.instantiate_upload_s > 0 and life.instantiate_then_upload_s > 0


def test_while_graph_draws_its_body(backend, tmp_path):
    _needs_conditional_nodes()
    case = _case(tmp_path, [{"kind": "while_loop", "size": 1000, "threshold": 0.1, "body": 2}])
    prepared = backend.prepare(case)
    try:
        shape = prepared.graph_shape()
        dot = prepared.graph_dot()
    finally:
        prepared.close()
    assert shape is not None
    kinds = [node.kind for node in shape.nodes]
    assert kinds == ["memcpy", "kernel", "conditional"], kinds
    body = shape.nodes[2].body
    assert shape.nodes[2].label == "WHILE" and body is not None
    assert [node.kind for node in body.nodes] == ["kernel", "kernel", "kernel"]  # 2 body kernels, the check
    assert "launchbench_while_check_graph" in body.nodes[-1].label
    assert "subgraph cluster_1" in dot


@pytest.mark.parametrize("temporary", ["preallocated", "pool", "async"])
def test_temporaries_from_the_async_pool_become_memory_nodes(backend, tmp_path, temporary):
    from launchbench.run.execute import execute_case

    case = _case(tmp_path, [{"kind": "axpy", "size": 100_000, "temporary": temporary, "repeat": 3}])
    result = execute_case(backend, case, backend.clock)
    assert result.error is None, result.error
    assert result.outputs_match is True, result.check_detail
    assert "host reference" in result.check_detail and "graph nodes" in result.check_detail
    prepared = backend.prepare(case)
    try:
        shape = prepared.graph_shape()
    finally:
        prepared.close()
    memory = 3 if temporary == "async" else 0
    assert shape.count("mem_alloc") == shape.count("mem_free") == memory
    assert shape.count("kernel") == 6
    if memory:
        assert "bytes" in next(n.label for n in shape.nodes if n.kind == "mem_alloc")


def test_multi_stream_graph_draws_its_branches(backend, tmp_path):
    steps = [{"kind": "scale", "size": 1000, "repeat": 2, "stream": s} for s in (1, 2, 3)]
    prepared = backend.prepare(_case(tmp_path, steps))
    try:
        shape = prepared.graph_shape()
    finally:
        prepared.close()
    assert shape.branches() >= 3 and shape.count("kernel") == 6


def test_graph_command_writes_the_while_body(tmp_path):
    _needs_conditional_nodes()
    out = tmp_path / "loop.dot"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "launchbench",
            "graph",
            str(ROOT / "scenarios" / "graph_features.yaml"),
            "--case",
            "while_norm/iters=10",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    assert "WHILE" in text and "cluster_1" in text and "launchbench_while_check_graph" in text
