"""GPU tests of chains whose sizes change (`pytest -m gpu`; skipped without CuPy and a device): every
strategy's outputs against eager's at every shape, the counts each one makes, a refused update that falls
back to re-capture, a cache that holds fewer graphs than there are shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from launchbench.scenario.expand import expand_scenario

pytestmark = pytest.mark.gpu
DATA = Path(__file__).parents[1] / "data" / "gpu"
MODES = {"eager", "recapture", "cache", "update"}


def _case(chain: str, **changes):
    import dataclasses

    (case,) = [c for c in expand_scenario(DATA / "shapes.yaml") if c.chain == chain]
    if changes:
        case = dataclasses.replace(case, shapes=dataclasses.replace(case.shapes, **changes))
    return case


def _run(backend, case):
    from launchbench.run.execute import execute_case

    result = execute_case(backend, case, backend.clock)
    assert result.error is None, result.error
    return result


@pytest.mark.parametrize("chain", ["elementwise", "reduction", "raw", "two_streams"])
def test_every_strategy_writes_what_eager_writes_at_every_shape(backend, chain):
    result = _run(backend, _case(chain))
    assert result.outputs_match is True, result.check_detail
    assert "equal eager over every one of 3 shapes" in str(result.check_detail)
    assert set(result.modes) == MODES
    for mode, outcome in result.modes.items():
        assert outcome.status in ("ok", "budget"), (mode, outcome.reason)
        assert min(outcome.samples["gpu_s_per_iter"]) > 0
        counts = outcome.shape_counts
        assert counts is not None and counts.changes > 0 and counts.iterations >= 2 * counts.changes - 2
    recapture = result.modes["recapture"].shape_counts
    assert recapture.recaptures == recapture.changes and recapture.setup_s > 0
    cache = result.modes["cache"].shape_counts
    assert (
        cache.cache_hits == cache.changes and cache.cache_misses == 0 == cache.recaptures
    )  # filled by priming
    update = result.modes["update"].shape_counts
    assert update.updates + update.update_refusals == update.changes
    if (
        chain != "reduction"
    ):  # CuPy may pick other reduction kernels at another size; the others keep their nodes
        assert update.updates == update.changes and update.update_refusals == 0 == update.recaptures


def test_an_update_the_gpu_refuses_falls_back_to_recapture_and_says_why(backend):
    result = _run(backend, _case("grows"))
    assert result.outputs_match is True, result.check_detail
    counts = result.modes["update"].shape_counts
    assert counts.update_refusals > 0 and counts.recaptures == counts.update_refusals
    assert counts.updates + counts.update_refusals == counts.changes
    reasons = list(counts.refusal_reasons)
    assert all("GraphExecUpdate" in reason for reason in reasons), reasons
    assert any("opology" in reason for reason in reasons), reasons  # one kernel against two
    assert sum(counts.refusal_reasons.values()) == counts.update_refusals


def test_a_cache_smaller_than_the_shapes_misses_at_every_change(backend):
    result = _run(backend, _case("elementwise", cache_limit=2))
    assert result.outputs_match is True, result.check_detail
    cache = result.modes["cache"].shape_counts
    assert cache.cache_misses == cache.recaptures == cache.changes > 0 and cache.cache_hits == 0


def test_the_graph_command_draws_the_first_shape(backend):
    prepared = backend.prepare(_case("elementwise"))
    try:
        dot = prepared.graph_dot()
    finally:
        prepared.close()
    assert dot.lstrip().startswith("digraph")


def _steps(arrays):
    from launchbench.kinds.base import BuiltStep

    return [BuiltStep(calls=[], outputs={name: array}) for name, array in arrays.items()]


def _states():
    """Outputs of mixed dtypes and shapes as reset, after eager, and after four graph walks: identical,
    within float32 rounding, different in 3 elements of one buffer, and NaN where eager has NaN."""
    import cupy
    import numpy as np

    rng = np.random.default_rng(5)
    initial = {
        "a": rng.random((4, 5)).astype(np.float32),
        "b": rng.integers(0, 9, 7).astype(np.int32),
        "c": rng.random(6),
        "keep": np.arange(3, dtype=np.float32),
    }
    eager = {k: v.copy() for k, v in initial.items()}
    eager["a"] = eager["a"] * 2
    eager["b"] = eager["b"] + 1
    eager["c"][2] = np.nan
    graphs = {"same": {k: v.copy() for k, v in eager.items()}}
    graphs["rounding"] = {k: v.copy() for k, v in eager.items()}
    graphs["rounding"]["a"] = np.nextafter(eager["a"], np.float32(np.inf))
    graphs["different"] = {k: v.copy() for k, v in eager.items()}
    graphs["different"]["b"][:3] += 5
    graphs["nan"] = {k: v.copy() for k, v in eager.items()}
    graphs["nan"]["c"][2] = 0.0
    to_device = {k: cupy.asarray(v) for k, v in initial.items()}
    return initial, eager, graphs, to_device


def test_the_device_check_says_what_the_host_check_says():
    import cupy

    from launchbench.backend import device_check
    from launchbench.backend.check import compare_outputs

    initial, eager, graphs, buffers = _states()
    steps = _steps(buffers)
    stream = cupy.cuda.Stream(non_blocking=True)

    def taken(contents):
        for name, array in contents.items():
            buffers[name][...] = cupy.asarray(array)
        cupy.cuda.Device().synchronize()  # written on the default stream, read on ``stream``
        return device_check.snapshot(stream, steps)

    judge = device_check.judge_against(taken(initial), taken(eager), stream)
    for name, graph in graphs.items():
        on_device = judge(taken(graph))
        on_host = compare_outputs(initial, eager, graph)
        assert on_device == on_host, name
    assert "within rounding: a" in str(compare_outputs(initial, eager, graphs["rounding"]).detail)
    assert "b: 3 of 7 elements differ" in str(compare_outputs(initial, eager, graphs["different"]).detail)
    assert "eager left keep unchanged" in str(compare_outputs(initial, eager, graphs["same"]).detail)


def test_shape_cases_leave_their_worker_as_fast_as_it_started(tmp_path):
    """Each case's check runs on the case's stream: after every single-stream case the canary (a 100-node
    graph's GPU time per node) stays within its bound of the worker's start, so none of them is marked
    disturbed. A chain on several streams may be (its own work runs on a second stream), and the run
    then exits 1."""
    import subprocess
    import sys

    from launchbench.results.store import load_run

    out = tmp_path / "run"
    command = [sys.executable, "-m", "launchbench", "run", str(DATA / "shapes.yaml"), "--passes", "1"]
    done = subprocess.run([*command, "--max-time", "0.4", "--quiet", "--out-dir", str(out)], check=False)
    record = load_run(out)
    disturbed = {c.chain for c in record.cases if c.disturbed_passes}
    assert disturbed <= {"two_streams"}  # work on a second stream may move it (docs/methodology.md)
    assert {"elementwise", "reduction", "raw"} <= {c.chain for c in record.cases} - disturbed
    assert done.returncode == (1 if disturbed else 0)


def test_copy_pairs_copies_every_device_pair_in_one_launch_and_leaves_the_rest():
    import cupy
    import numpy as np

    from launchbench.backend.copy_many import copy_pairs

    stream = cupy.cuda.Stream()
    with stream:
        sources = [cupy.arange(n, dtype=cupy.float32) + 1 for n in (1, 257, 70_000, 1 << 18)]
        targets = [cupy.zeros_like(a) for a in sources]
        odd = (cupy.zeros(3, cupy.uint8), cupy.ones(3, cupy.uint8))  # 3 bytes: not a multiple of 4
        strided = (cupy.zeros(8, cupy.float32)[::2], cupy.ones(4, cupy.float32))  # not contiguous
        host = (np.zeros(4, np.float32), np.ones(4, np.float32))
        pairs = [*zip(targets, sources), odd, strided, host]
        rest = copy_pairs(pairs)
    stream.synchronize()
    assert [id(pair) for pair in rest] == [id(odd), id(strided), id(host)]
    assert all(bool(cupy.array_equal(t, s)) for t, s in zip(targets, sources))
    assert not bool(odd[0].any()) and not bool(strided[0].any())  # left for the caller
    single = [(cupy.zeros(4, cupy.float32), cupy.ones(4, cupy.float32))]
    assert [id(p) for p in copy_pairs(single)] == [
        id(single[0])
    ]  # one pair: nothing gained, the caller copies it


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int64", "uint16", "bool", "float16"])
@pytest.mark.parametrize("blocks", [(64, 65_535), (1, 3)])  # the grid's limits, and a grid that must loop
def test_segment_counts_count_what_the_cumulative_sum_counts(dtype, blocks, monkeypatch):
    """count_many's kernel (every dtype of C_TYPES; float16 goes to the cumulative sum) against the
    cumulative sum and NumPy, over segments of 0 to 70,000 elements, NaNs equal to NaNs, -0.0 to 0.0."""
    import cupy
    import numpy as np

    from launchbench.backend import count_many

    monkeypatch.setattr(count_many, "MAX_BLOCKS_X", blocks[0])
    monkeypatch.setattr(count_many, "MAX_BLOCKS_Y", blocks[1])
    rng = np.random.default_rng(11)
    sizes = [0, 1, 31, 257, 70_000, 0, 5, 4096, 3]
    bounds = np.cumsum([0, *sizes])
    a = (rng.random(int(bounds[-1])) * 4).astype(dtype)
    b = a.copy()
    changed = rng.random(a.size) < 0.3
    b[changed] = (a[changed] + 1).astype(dtype) if dtype != "bool" else ~a[changed]
    if dtype.startswith("float"):
        a[:40], b[:40] = np.nan, np.nan  # equal
        a[40:50], b[40:50] = -0.0, 0.0  # equal
        b[50:60] = np.nan  # differ
    expected = [
        int(np.sum(x != y) - np.sum(np.isnan(x.astype(float)) & np.isnan(y.astype(float))))
        for x, y in zip(np.split(a, bounds[1:-1]), np.split(b, bounds[1:-1]))
    ]
    starts, stops = bounds[:-1].astype(np.int64), bounds[1:].astype(np.int64)
    got = count_many.segment_counts(cupy.asarray(a), cupy.asarray(b), starts, stops)
    by_cumsum = count_many._by_cumsum(cupy.asarray(a), cupy.asarray(b), starts, stops)
    assert got.tolist() == by_cumsum.tolist() == expected
    assert (np.dtype(dtype) in count_many.C_TYPES) == (dtype != "float16")
