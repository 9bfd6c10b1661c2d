"""GPU tests of the scenario library (`pytest -m gpu tests/kinds/test_workloads_gpu.py`): the python, h2d and
d2h step kinds, multi-stream chains, every case of the new scenario files, the RawKernel GEMM against
cuBLAS, one MLP training step against NumPy, and the cuBLAS variant's capture refusal."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
NEW_SCENARIOS = ["tiny_kernels", "training_step", "inference", "preprocessing", "multi_stream", "own_code"]
if str(SCENARIOS) not in sys.path:
    sys.path.insert(0, str(SCENARIOS))


def fast(case, max_time: float = 0.3):
    return dataclasses.replace(
        case,
        measure=case.measure.model_copy(
            update={"max_time": max_time, "passes": 1, "min_samples": 3, "warmup_time": 0.02}
        ),
    )


def run_case(backend, case):
    """Measured briefly; a chain of thousands of launches gets the time its warm-up, clock settling and
    calibration take before the sampler's first round (or it would end with no samples)."""
    from launchbench.run.execute import execute_case

    return execute_case(backend, fast(case, 0.3 if case.launches_per_iter < 1000 else 3.0), backend.clock)


def assert_measured_and_matching(result):
    assert result.error is None, result.error
    assert result.outputs_match is True, result.check_detail
    for mode in ("eager", "graph"):
        assert result.modes[mode].status in ("ok", "budget"), (mode, result.modes[mode].reason)
        assert len(result.modes[mode].samples["wall_s_per_iter"]) >= 1
        assert min(result.modes[mode].samples["gpu_s_per_iter"]) > 0


def scenario_cases():
    return [
        pytest.param(case, id=f"{name}:{case.case_id}")
        for name in NEW_SCENARIOS
        for case in expand_scenario(SCENARIOS / f"{name}.yaml")
    ]


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("name: t\ndescription: new kinds\n" + textwrap.dedent(body), encoding="utf-8")
    return path


# --- every case of every new scenario file -----------------------------------------------------------


@pytest.mark.parametrize("case", scenario_cases())
def test_scenario_case(backend, case):
    result = run_case(backend, case)
    if case.chain == "cublas":
        assert result.error is None, result.error
        assert result.modes["eager"].status in ("ok", "budget")
        graph = result.modes["graph"]
        assert graph.status == "not_capturable", graph
        assert "cuBLAS" in (graph.reason or ""), graph.reason
        print(f"{case.case_id}: {graph.reason}")
        return
    assert_measured_and_matching(result)
    nodes = result.modes["graph"].lifecycle.nodes
    print(f"{case.case_id}: {case.launches_per_iter} launches, {nodes} graph nodes; {result.check_detail}")
    assert nodes is None or nodes >= case.launches_per_iter  # some CuPy reductions launch two kernels


# --- the new kinds, alone and on auxiliary streams ---------------------------------------------------


def test_host_copies_and_python_steps_on_streams(backend, tmp_path):
    (tmp_path / "lb_gpu_user.py").write_text(
        textwrap.dedent("""\
        import numpy as np

        def axpy(xp, stream, n, alpha):
            x = xp.arange(n, dtype=np.float32)
            y = xp.ones(n, dtype=np.float32)
            def run():
                xp.multiply(y, np.float32(alpha), out=y)
                xp.add(y, x, out=y)
            return {"run": run, "outputs": {"y": y}}

        def with_reset(xp, stream, n):
            y = xp.zeros(n, dtype=np.float32)
            def reset():
                y.fill(1)
            reset()
            return {"run": lambda: xp.add(y, np.float32(1), out=y), "outputs": {"y": y}, "reset": reset}

        def just_run(xp, stream):
            buf = xp.zeros(4, dtype=np.float32)
            return lambda: buf.fill(2)
        """)
    )
    path = write(
        tmp_path,
        """\
        chains:
          h2d: [{kind: h2d, bytes: 100000, repeat: 3}]
          d2h: [{kind: d2h, bytes: 100000, repeat: 2}]
          round_trip:
            - {kind: h2d, bytes: 4096}
            - {kind: scale, size: 1024}
            - {kind: d2h, bytes: 4096}
          python: [{kind: python, callable: "lb_gpu_user:axpy", args: {n: 1000, alpha: 2.0}, launches: 2, repeat: 3}]
          python_reset: [{kind: python, callable: "lb_gpu_user:with_reset", args: {n: 100}, repeat: 2}]
          python_callable: [{kind: python, callable: "lb_gpu_user:just_run"}]
          streams:
            - {kind: h2d, bytes: 4096, stream: 1}
            - {kind: d2h, bytes: 4096, stream: 2}
            - {kind: python, callable: "lb_gpu_user:axpy", args: {n: 1000, alpha: 0.5}, launches: 2, stream: 3, repeat: 2}
            - {kind: scale, size: 1000, stream: 1, repeat: 2}
            - {kind: reduction, size: 100000, stream: 2}
            - {kind: raw, stream: 3, function: inc, grid: 1, block: 32,
               source: 'extern "C" __global__ void inc(float* x) { x[threadIdx.x] += 1.0f; }',
               buffers: {x: {size: 32}}, args: [{buffer: x}]}
            - {kind: empty, stream: 4, repeat: 5}
            - {kind: copy, bytes: 4096, stream: 4}
            - {kind: memset, bytes: 4096, stream: 5}
            - {kind: fma, size: 1000}
        """,
    )
    for case in expand_scenario(path):
        result = run_case(backend, case)
        if case.chain == "python_callable":  # no outputs: no comparison, but measured in both modes
            assert result.error is None and result.outputs_match is None, result.check_detail
            assert result.modes["graph"].status in ("ok", "budget")
            continue
        assert_measured_and_matching(result)
        assert "unchanged" not in result.check_detail, (case.chain, result.check_detail)
        nodes = result.modes["graph"].lifecycle.nodes
        if case.chain in ("h2d", "d2h", "round_trip"):
            assert nodes == case.launches_per_iter, (case.chain, nodes)
        print(f"{case.chain}: {nodes} nodes; {result.check_detail}")


def test_d2h_output_is_compared(backend, tmp_path):
    """The pinned host buffer of a d2h step is an output, and the graph's copy lands in it."""
    path = write(tmp_path, "chain: [{kind: d2h, bytes: 4096}]\n")
    (case,) = expand_scenario(path)
    prepared = backend.prepare(fast(case))
    try:
        (name,) = prepared.steps[0].outputs
        host = prepared.steps[0].outputs[name]
        assert isinstance(host, np.ndarray) and name.endswith(".host")
        from launchbench.backend.chain import reset_steps

        reset_steps(prepared.stream, prepared.steps)
        assert np.all(host == 0xAB)
        prepared.workloads["graph"].run_batch(1)
        assert not np.all(host == 0xAB)
        check = prepared.check_outputs()
    finally:
        prepared.close()
    assert check.match is True, check.detail


def test_python_step_errors_name_the_file_and_callable(backend, tmp_path):
    (tmp_path / "lb_gpu_bad.py").write_text(
        "def wrong(xp, stream):\n    return 42\n\ndef raises(xp, stream):\n    raise ValueError('no')\n"
    )
    path = write(
        tmp_path,
        """\
        chains:
          missing_module: [{kind: python, callable: "lb_no_such_module:f"}]
          missing_function: [{kind: python, callable: "lb_gpu_bad:nothing"}]
          wrong_return: [{kind: python, callable: "lb_gpu_bad:wrong"}]
          raises: [{kind: python, callable: "lb_gpu_bad:raises"}]
        """,
    )
    for case in expand_scenario(path):
        result = run_case(backend, case)
        assert result.error, case.chain
        assert str(path) in result.error and case.steps[0].callable in result.error, result.error


# --- the multi-stream graph has parallel branches ---------------------------------------------------


def test_multi_stream_graph_has_parallel_branches(backend):
    cudart = pytest.importorskip("cuda.bindings.runtime")
    cases = {c.case_id: c for c in expand_scenario(SCENARIOS / "multi_stream.yaml")}

    def roots_and_nodes(case):
        prepared = backend.prepare(fast(case))
        try:
            handle = getattr(prepared.captured.graph, "graph", None)
            if not handle:
                pytest.skip("this CuPy keeps no graph handle (CuPy 13)")
            err, _roots, roots = cudart.cudaGraphGetRootNodes(handle, 0)  # 0: count only
            assert int(err) == 0, err
            err, _nodes, nodes = cudart.cudaGraphGetNodes(handle, 0)
            assert int(err) == 0, err
            return int(roots), int(nodes)
        finally:
            prepared.close()

    parallel = roots_and_nodes(cases["parallel/size=10000"])
    serial = roots_and_nodes(cases["serial/size=10000"])
    print(f"parallel: {parallel[0]} roots, {parallel[1]} nodes; serial: {serial[0]} roots, {serial[1]} nodes")
    assert serial[0] == 1 and serial[1] == 32
    assert parallel[0] >= 4  # one branch per auxiliary stream, none waiting on another
    assert parallel[1] >= 32


# --- the GEMM kernel and the MLP step ---------------------------------------------------------------


@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
@pytest.mark.parametrize(
    ("m", "n", "k"), [(1, 1, 1), (17, 33, 65), (64, 1024, 1024), (100, 10, 1000), (1024, 10, 64)]
)
def test_gemm_matches_cublas(m, n, k, trans_a, trans_b):
    import cupy
    from workloads.gemm import check_against_cublas

    error = check_against_cublas(cupy, m, n, k, trans_a, trans_b, seed=m + n + k)
    assert error < 1e-4, error


def test_gemm_alpha_beta_and_bad_shapes():
    import cupy
    from workloads.gemm import Gemm

    gemm = Gemm(cupy)
    a = cupy.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = cupy.asarray(np.ones((3, 2), dtype=np.float32))
    out = cupy.ones((2, 2), dtype=np.float32)
    gemm(a, b, out, alpha=2.0, beta=1.0)
    assert np.allclose(cupy.asnumpy(out), 2 * cupy.asnumpy(a) @ np.ones((3, 2)) + 1)
    with pytest.raises(ValueError, match="do not multiply"):
        gemm.bind(a, a, out)
    with pytest.raises(ValueError, match="unit column stride"):
        gemm.bind(a.T, b, out)


@pytest.mark.parametrize("cublas", [False, True])
def test_one_mlp_step_matches_numpy(cublas):
    import cupy
    from workloads import mlp

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        step = mlp.training_step(
            cupy, stream, batch=64, inputs=1024, hidden=1024, classes=10, lr=0.05, seed=3, cublas=cublas
        )
        step.run()
    stream.synchronize()
    expected, grads = mlp.reference_step(step.initial_params(), step.host["x"], step.host["y"], lr=0.05)
    for name in mlp.PARAMS:
        got_grad = cupy.asnumpy(step.grads[name])
        error = np.abs(got_grad - grads[name]).max() / np.abs(grads[name]).max()
        assert error < 1e-3, (name, error)
        np.testing.assert_allclose(
            cupy.asnumpy(step.params[name]), expected[name], rtol=1e-3, atol=1e-6, err_msg=name
        )
    assert not np.array_equal(
        cupy.asnumpy(step.params["w1"]), step.host["w1"]
    )  # the step changed the weights


def test_cublas_training_step_is_not_capturable_with_the_reason(backend):
    case = next(
        c for c in expand_scenario(SCENARIOS / "training_step.yaml") if c.case_id == "cublas/batch=16"
    )
    result = run_case(backend, case)
    assert result.modes["eager"].status in ("ok", "budget")
    graph = result.modes["graph"]
    assert graph.status == "not_capturable" and "cuBLAS" in graph.reason, graph
    assert result.outputs_match is None


def test_inference_outputs_are_right():
    import cupy
    from workloads import inference

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        model = inference.classify(cupy, stream, batch=8, inputs=64, hidden=32, classes=5, host_io=True)
        model.run()
    stream.synchronize()
    x = (model.host["raw"].astype(np.float64) - cupy.asnumpy(model.mean)) * cupy.asnumpy(model.inv_std)
    for w, b, last in zip(model.weights, model.biases, (False, False, True)):
        x = x @ cupy.asnumpy(w) + cupy.asnumpy(b)
        if not last:
            x = np.maximum(x, 0)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    probs = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(cupy.asnumpy(model.outputs["probs"]), probs, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(cupy.asnumpy(model.labels), probs.argmax(axis=1))
    np.testing.assert_array_equal(model.labels_host, probs.argmax(axis=1))


def test_preprocess_outputs_are_right():
    import cupy
    from workloads import preprocess

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        work = preprocess.augment(cupy, stream, batch=2, height=5, width=7)
        work.run()
    stream.synchronize()
    expected = preprocess.reference(np.array(work.images_host), work.contrast, work.brightness)
    np.testing.assert_allclose(cupy.asnumpy(work.out), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(work.out_host, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32", "uint8", "int64"])
def test_initial_buffers_are_the_same_random_values_every_run_in_their_range(dtype):
    import cupy
    import numpy as np

    from launchbench.kinds.buffers import random_array

    first = random_array(100_001, dtype, np.random.default_rng(7))
    again = random_array(100_001, dtype, np.random.default_rng(7))
    other = random_array(100_001, dtype, np.random.default_rng(8))
    assert first.dtype == np.dtype(dtype) and first.shape == (100_001,)
    assert bool(cupy.array_equal(first, again)) and not bool(cupy.array_equal(first, other))
    low, high = (0.5, 1.5) if np.dtype(dtype).kind == "f" else (0, 99)
    assert low <= float(first.min()) and float(first.max()) <= high
    assert len(cupy.unique(first)) > 50  # random, not a constant
    assert random_array(0, dtype, np.random.default_rng(7)).size == 0


def test_small_buffers_share_a_draw_without_overlap_and_each_case_starts_its_own_draws():
    import cupy
    import numpy as np

    from launchbench.kinds import buffers

    rng = np.random.default_rng(7)
    sizes = [1, 1000, 4096, 250_000, 3]
    small = [buffers.random_array(n, "float32", rng) for n in sizes]
    spans = sorted((a.data.ptr, a.data.ptr + a.nbytes) for a in small)
    assert all(start % buffers.ALIGN_BYTES == 0 for start, _ in spans)
    assert all(end <= start for (_, end), (start, _) in zip(spans, spans[1:]))  # no two overlap
    assert len({id(a.base) for a in small}) == 1  # one shared draw
    large = buffers.random_array(buffers.SHARED_DRAW_MAX_BYTES // 4 + 1, "float32", rng)
    assert large.base is None  # a draw of its own
    small[1][...] = 0  # writing one buffer leaves its neighbours as drawn
    assert float(small[0].min()) >= 0.5 and float(small[2].min()) >= 0.5
    again = [buffers.random_array(n, "float32", np.random.default_rng(7)) for n in sizes[:1]]
    rerun = np.random.default_rng(7)
    replay = [buffers.random_array(n, "float32", rerun) for n in sizes]
    assert bool(cupy.array_equal(replay[0], again[0]))
    assert all(bool(cupy.array_equal(a, b)) for a, b in zip(replay[2:], small[2:]))
