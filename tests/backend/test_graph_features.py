"""The graph features CuPy hides, on CPU: the WHILE loop's pass count and host reference, the axpy
temporaries' node counts, the scenario file and its bad inputs, the reference check and the DOT drawing
of the new graph shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter

from launchbench.backend.base import DrawsGraph, GraphDrawing
from launchbench.backend.check import compare_reference
from launchbench.backend.graph_shape import GraphShape, Node, describe, to_dot
from launchbench.errors import LaunchbenchError
from launchbench.kinds import graph_nodes
from launchbench.kinds.while_loop import check_source, host_reference, initial_vector
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import Step

ROOT = Path(__file__).parents[2]
STEP = TypeAdapter(Step)


def _loop(**fields):
    return STEP.validate_python({"kind": "while_loop", **fields})


@pytest.mark.parametrize(
    "fields",
    [
        {"size": 1, "alpha": 0.5, "threshold": 0.1},
        {"size": 1000, "alpha": 0.99, "threshold": 0.5},
        {"size": 7, "alpha": 0.9, "threshold": 0.0, "max_iters": 30},
        {"size": 100, "alpha": 0.7, "threshold": 0.01, "body": 3},
        {"size": 100, "alpha": 0.5, "threshold": 0.0, "max_iters": 400, "dtype": "float32"},  # to zero
        {"size": 50, "alpha": 0.999, "threshold": 1e-3, "dtype": "float64", "max_iters": 20_000},
        {"size": 10, "alpha": 0.5, "threshold": 2.0},  # never enters the loop
    ],
)
def test_the_pass_count_known_on_the_host_is_the_count_the_loop_runs(fields):
    step = _loop(**fields)
    reference = host_reference(step)
    assert int(reference["count"][0]) == step.iterations()
    assert step.launches() == 2 + step.iterations() * (step.body + 1)
    assert reference["x"].dtype == np.dtype(step.dtype)
    x = initial_vector(step.size, step.dtype)
    if step.iterations() == 0:
        assert np.array_equal(reference["x"], x)
    else:  # the loop stopped because the norm fell to the threshold, or at its pass limit
        assert np.max(np.abs(reference["x"])) <= step.threshold or step.iterations() == step.max_iters
        assert np.all(reference["x"] < x) or not np.any(x)


def test_the_scenario_loops_run_the_passes_their_case_ids_name():
    cases = {c.case_id: c for c in expand_scenario(ROOT / "scenarios" / "graph_features.yaml")}
    for chain in ("while_norm", "while_counter"):
        for iters in (1, 10, 100, 1000):
            step = cases[f"{chain}/iters={iters}"].steps[0]
            assert step.iterations() == iters
            assert cases[f"{chain}/iters={iters}"].launches_per_iter == 2 + 2 * iters
    temporaries = {c.steps[0].temporary for c in cases.values() if c.chain.startswith("axpy")}
    assert temporaries == {"preallocated", "pool", "async"}
    assert len(cases) == 14


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"kind": "while_loop", "size": 10, "alpha": 1.0}, "alpha"),
        ({"kind": "while_loop", "size": 10, "alpha": 0}, "alpha"),
        ({"kind": "while_loop", "size": 10, "threshold": -1}, "threshold"),
        ({"kind": "while_loop", "size": 10, "dtype": "float16"}, "dtype"),
        ({"kind": "while_loop", "size": 10, "body": 0}, "body"),
        ({"kind": "while_loop", "size": 1 << 25}, "size"),
        ({"kind": "while_loop", "size": 10, "max_iters": 0}, "max_iters"),
        ({"kind": "axpy", "size": 10, "temporary": "managed"}, "temporary"),
    ],
)
def test_bad_graph_feature_steps_are_refused_with_the_key(tmp_path, step, message):
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "description": "x", "chains": {"c": [step]}}))
    with pytest.raises(LaunchbenchError, match=rf"chains\.c\[0\]\.{message}"):
        expand_scenario(path)


def test_the_check_kernels_declare_what_nvrtc_needs():
    graph, eager = check_source("float64", graph=True), check_source("float32", graph=False)
    assert "cudaGraphSetConditional(handle, go)" in graph and "typedef double T;" in graph
    assert "__cudart_builtin__" in graph and "launchbench_while_check_graph" in graph
    assert "cudaGraphSetConditional" not in eager and "typedef float T;" in eager  # eager needs no runtime
    assert eager.count('extern "C" __global__') == graph.count('extern "C" __global__') == 1


def test_without_cuda_bindings_the_graph_feature_says_why(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_bindings(name, *args, **kwargs):
        if name.startswith("cuda"):
            raise ImportError("no cuda")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_bindings)
    with pytest.raises(graph_nodes.GraphFeatureUnavailable, match="cuda-bindings"):
        graph_nodes.require_conditional_nodes()


def test_eager_output_is_held_to_the_host_reference():
    expected = {"a": np.arange(4, dtype=np.float32), "n": np.array([3], dtype=np.int32)}
    assert compare_reference({}, {}) is None
    same = compare_reference(expected, {k: v.copy() for k, v in expected.items()})
    assert same is not None and same.match is True
    off = {"a": expected["a"].copy(), "n": expected["n"]}
    off["a"][3] = np.nextafter(off["a"][3], np.float32(10))  # one unit in the last place
    differs = compare_reference(expected, off)
    assert differs is not None and differs.match is False and "a: 1 of 4 elements differ" in differs.detail
    wrong_type = compare_reference(expected, {"a": expected["a"].astype(np.float64), "n": expected["n"]})
    assert wrong_type is not None and wrong_type.match is False and "float64" in wrong_type.detail


def _loop_graph() -> GraphShape:
    body = GraphShape(
        [Node("kernel", "kernel\ncupy_multiply"), Node("kernel", "kernel\nlaunchbench_while_check_graph")],
        [(0, 1)],
    )
    return GraphShape(
        [Node("memcpy", "memcpy"), Node("kernel", "kernel\ncheck"), Node("conditional", "WHILE", body)],
        [(0, 1), (1, 2)],
    )


def test_dot_draws_a_conditional_body_as_a_cluster_the_node_points_into():
    dot = to_dot(_loop_graph(), "graph_features while_norm/iters=10")
    assert dot.startswith("digraph launchbench {") and dot.rstrip().endswith("}")
    assert "subgraph cluster_1 {" in dot and 'label="WHILE body"' in dot
    assert "n2 -> b1_n0 [style=dashed, lhead=cluster_1" in dot
    assert "b1_n0 -> b1_n1;" in dot and "n0 -> n1;" in dot
    assert "shape=diamond" in dot
    assert describe(_loop_graph()) == (
        "3 nodes (1 conditional, 1 kernel, 1 memcpy); WHILE body: 2 nodes (2 kernel)"
    )
    assert _loop_graph().count("kernel") == 3 and _loop_graph().count("conditional") == 1


def test_dot_draws_memory_nodes_and_parallel_branches():
    fork = GraphShape(
        [
            Node("event_record", "event record"),
            Node("mem_alloc", "mem alloc\n4096 bytes"),
            Node("kernel", "kernel"),
            Node("kernel", "kernel"),
            Node("mem_free", "mem free"),
        ],
        [(0, 1), (0, 3), (1, 2), (2, 4)],
    )
    dot = to_dot(fork)
    assert 'label="mem alloc\\n4096 bytes"' in dot and "#d9ead3" in dot and "#f4cccc" in dot
    assert fork.branches() == 2 and _loop_graph().branches() == 1
    three_streams = GraphShape([Node("kernel", "k") for _ in range(6)], [(0, 1), (2, 3), (4, 5)])
    assert three_streams.branches() == 3  # a capture keeps no fork node: one root per stream
    assert "2 parallel branches" in describe(fork)
    assert to_dot(GraphShape([Node("kernel", 'say "hi"')])).count('\\"hi\\"') == 1


class _Prepared:
    """A prepared case as the graph command sees it: DrawsGraph where it can draw, else only close."""

    closed = False

    def close(self) -> None:
        self.closed = True


class _Drawing(_Prepared):
    def draw_graph(self) -> GraphDrawing:
        return GraphDrawing('digraph launchbench {\n  n0 [label="kernel"];\n}\n', "1 nodes (1 kernel)")


@pytest.mark.parametrize("prepared", [_Drawing(), _Prepared()], ids=["draws", "cannot-draw"])
def test_the_graph_command_draws_through_the_declared_protocol(tmp_path, monkeypatch, prepared):
    from click.testing import CliRunner

    from launchbench.cli import cli
    from launchbench.run import worker

    class Backend:
        def prepare(self, case):
            assert case.case_id == "empty/length=1"
            return prepared

    monkeypatch.setattr(worker, "cupy_backend", lambda device: Backend())
    out = tmp_path / "g.dot"
    result = CliRunner().invoke(cli, ["graph", str(ROOT / "scenarios" / "quickstart.yaml"), "-o", str(out)])
    assert prepared.closed
    if isinstance(prepared, DrawsGraph):
        assert result.exit_code == 0, result.output
        assert out.read_text() == prepared.draw_graph().dot
        assert result.output.splitlines() == [
            f"quickstart empty/length=1: graph written to {out}",
            "  1 nodes (1 kernel)",
        ]
    else:
        assert result.exit_code == 2 and "this backend cannot draw its graphs" in result.output
        assert not out.exists()
