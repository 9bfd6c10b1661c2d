"""GPU tests of the pytest plugin (`pytest -m gpu tests/api/test_pytest_plugin_gpu.py`): the fixture measures a
YAML chain of empty kernels and a CuPy function (a python step, in worker processes) eagerly and as a
CUDA Graph, saves the runs and compares them with themselves; and launchbench.api.run on the same chain."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
pytest_plugins = ("pytester",)

TEST_FILE = '''
import numpy as np

def scale(xp, stream, n):
    x = xp.ones(n, dtype=np.float32)
    def run():
        xp.multiply(x, np.float32(1.001), out=x)
        xp.add(x, np.float32(1.0), out=x)
    return {"run": run, "outputs": {"x": x}}

def test_empty_kernels(launchbench):
    result = launchbench.measure("""
sweep:
  length: [50]
chain:
  - kind: empty
    repeat: $length
""", max_time=1.0, passes=2)
    assert result.speedup("graph") > 1.5
    assert result.outputs_match
    assert result.case("chain/length=50").median("graph") > 0

def test_a_function(launchbench):
    result = launchbench.measure(scale, args={"n": 4096}, launches=2, max_time=1.0, passes=2)
    assert result.outputs_match
    assert result.speedup("graph") > 1.2
'''


def test_the_fixture_measures_saves_and_compares_on_the_gpu(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chains=TEST_FILE)
    pytester.runpytest_subprocess("--launchbench-save", "saved").assert_outcomes(passed=2)
    saved = sorted(p.name for p in (pytester.path / "saved").iterdir())
    assert saved == ["test_chains.py_test_a_function", "test_chains.py_test_empty_kernels"]
    result = pytester.runpytest_subprocess(
        "--launchbench-compare",
        "saved",
        "--launchbench-fail-on",
        "wall_us_per_iter:300%",
        "--launchbench-allow",
        "blind",
    )  # two passes each: host-bound rows' MDE may exceed any rule; blind rows are let pass
    result.assert_outcomes(passed=2)


def test_the_api_runs_a_chain_on_the_gpu(tmp_path: Path) -> None:
    from launchbench import api

    chain = "name: api\ndescription: empty kernels\nchain:\n  - kind: empty\n    repeat: 20\n"
    run = api.run(chain, out_dir=tmp_path / "r", max_time=0.5, passes=2)
    assert run.outputs_match and run.speedup("graph") > 1.5
    assert list(run.table()["mode"]) == ["eager", "graph"]
    assert api.compare(run, api.load(tmp_path / "r"), fail_on="wall_us_per_iter:5%", allow=["blind"]).passed
