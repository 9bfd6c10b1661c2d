"""The scenario library without a GPU: every scenario file validates, the new step kinds (python, h2d,
d2h) and the stream field are checked at load time with the file named, the python step's import and
return contract, and the NumPy reference of the MLP training step that the GPU test checks against."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from launchbench.errors import LaunchbenchError, ScenarioError
from launchbench.kinds.host_copy import HostCopyStep
from launchbench.kinds.python_call import PythonStepError, load_callable, normalise_result
from launchbench.kinds.python_step import PythonStep
from launchbench.run.execute import expected_nodes
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import STEP_FIELDS, STEP_KINDS

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
NEW_SCENARIOS = ["tiny_kernels", "training_step", "inference", "preprocessing", "multi_stream", "own_code"]
HEAD = "name: t\ndescription: a test scenario\n"

sys.path.insert(0, str(SCENARIOS))
from workloads import inference, mlp, own_code, preprocess  # noqa: E402


def write(tmp_path: Path, body: str, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body), encoding="utf-8")
    return path


# --- the scenario files ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NEW_SCENARIOS)
def test_library_scenario_says_what_it_models(name):
    """(That every shipped file validates and loads: test_cli_run and test_scenario_load.)"""
    path = SCENARIOS / f"{name}.yaml"
    assert all(c.launches_per_iter >= 1 for c in expand_scenario(path))
    description = yaml.safe_load(path.read_text())["description"]
    assert len(description) > 200  # says what it models and what to read


def test_tiny_kernels_sweep():
    cases = expand_scenario(SCENARIOS / "tiny_kernels.yaml")
    lengths = sorted({c.params["length"] for c in cases})
    assert lengths[0] == 1 and lengths[-1] == 10_000 and len(lengths) == 7
    assert sorted({c.params["size"] for c in cases if c.chain == "scale"}) == [1000, 100_000, 10_000_000]
    assert len(cases) == 7 + 7 * 3
    assert cases[0].measure.max_time <= 3 and cases[0].measure.passes == 1  # the file runs in minutes


def test_declared_launches_match_the_workloads():
    """The `launches` a scenario declares for a python step is the count its module issues."""
    declared = {
        ("training_step", "rawkernel"): mlp.LAUNCHES,
        ("training_step", "cublas"): mlp.LAUNCHES,
        ("inference", "device_only"): inference.LAUNCHES,
        ("inference", "serving"): inference.LAUNCHES_HOST_IO,
        ("preprocessing", "images"): preprocess.LAUNCHES,
        ("own_code", "particles"): 4,
    }
    for (scenario, chain), launches in declared.items():
        for case in expand_scenario(SCENARIOS / f"{scenario}.yaml"):
            if case.chain == chain:
                (step,) = case.steps
                assert isinstance(step, PythonStep) and step.launches_per_call == launches, (scenario, chain)
                assert case.launches_per_iter == launches


def test_training_step_args_follow_the_sweep():
    cases = {c.case_id: c for c in expand_scenario(SCENARIOS / "training_step.yaml")}
    step = cases["cublas/batch=64"].steps[0]
    assert step.callable == "workloads.mlp:training_step"
    assert step.args["batch"] == 64 and step.args["cublas"] is True
    assert cases["rawkernel/batch=1024"].steps[0].args.get("cublas") is None


def test_multi_stream_cases():
    cases = {
        c.chain: c for c in expand_scenario(SCENARIOS / "multi_stream.yaml") if c.params["size"] == 10_000
    }
    assert [s.stream for s in cases["parallel"].steps] == [1, 2, 3, 4]
    assert [s.stream for s in cases["serial"].steps] == [0, 0, 0, 0]
    assert cases["parallel"].launches_per_iter == cases["serial"].launches_per_iter == 32
    assert expected_nodes(cases["parallel"]) is None  # fork/join: node count not checked
    assert expected_nodes(cases["serial"]) == 32


def test_preprocessing_pipeline_uses_host_copies():
    case = next(
        c for c in expand_scenario(SCENARIOS / "preprocessing.yaml") if c.case_id == "pipeline/bytes=65536"
    )
    kinds = [s.kind for s in case.steps]
    assert kinds == ["h2d", "scale", "fma", "scale", "d2h"]
    assert case.steps[1].size == 65536 // 4
    assert expected_nodes(case) == 5


# --- the model: new kinds, the stream field, errors naming the file ------------------------------------


def test_new_kinds_are_registered():
    for kind in ("python", "h2d", "d2h"):
        assert kind in STEP_KINDS and kind in STEP_FIELDS
    assert "stream" in STEP_FIELDS["scale"] and "stream" in STEP_FIELDS["python"]
    assert "launches" in STEP_FIELDS["python"]  # the YAML key (an alias of launches_per_call)


def test_python_step_fields(tmp_path):
    path = write(
        tmp_path,
        """\
        chain:
          - kind: python
            callable: "pkg.mod:fn"
            args: {n: 3, name: x}
            launches: 5
            repeat: 2
            stream: 2
        """,
    )
    (case,) = expand_scenario(path)
    (step,) = case.steps
    assert isinstance(step, PythonStep)
    assert step.callable == "pkg.mod:fn" and step.args == {"n": 3, "name": "x"}
    assert step.stream == 2 and case.launches_per_iter == 10
    assert expected_nodes(case) is None


def test_host_copy_steps(tmp_path):
    path = write(
        tmp_path,
        """\
        chain:
          - {kind: h2d, bytes: 4096}
          - {kind: d2h, bytes: 1000000, repeat: 3}
        """,
    )
    (case,) = expand_scenario(path)
    assert all(isinstance(s, HostCopyStep) for s in case.steps)
    assert case.kinds == "h2d+d2h" and case.launches_per_iter == 4 and expected_nodes(case) == 4


@pytest.mark.parametrize(
    "callable_spec",
    [
        "mlp.training_step",
        "workloads.mlp:",
        ":training_step",
        "a:b:c",
        "work loads:f",
        "1mod:f",
        "mod:f()",
        "mod.:f",
    ],
)
def test_bad_callable_syntax_is_refused_with_the_file_named(tmp_path, callable_spec):
    path = write(
        tmp_path,
        f"""\
        chain:
          - kind: python
            callable: "{callable_spec}"
        """,
    )
    with pytest.raises(ScenarioError) as info:
        expand_scenario(path)
    err = info.value
    assert err.file == str(path) and err.line == 5
    assert "module:function" in str(err) and str(path) in str(err)


@pytest.mark.parametrize("stream", [8, -1, 100])
def test_unknown_stream_is_refused_with_the_file_named(tmp_path, stream):
    path = write(
        tmp_path,
        f"""\
        chain:
          - kind: empty
          - kind: scale
            size: 10
            stream: {stream}
        """,
    )
    with pytest.raises(ScenarioError) as info:
        expand_scenario(path)
    err = info.value
    assert err.file == str(path) and err.line == 7 and err.key_path == "chain[1].stream"
    assert f"stream {stream} does not exist" in str(err) and "1 to 7" in str(err)


def test_stream_from_defaults(tmp_path):
    path = write(
        tmp_path,
        """\
        defaults: {stream: 3}
        chain:
          - {kind: empty}
          - {kind: scale, size: 10, stream: 0}
        """,
    )
    (case,) = expand_scenario(path)
    assert [s.stream for s in case.steps] == [3, 0]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ('{kind: python, callable: "m:f", args: {xp: 1}}', "passed by launchbench"),
        ('{kind: python, callable: "m:f", args: {stream: 1}}', "passed by launchbench"),
        ('{kind: python, callable: "m:f", launches: 0}', "greater than or equal to 1"),
        ('{kind: python, callable: "m:f", launches_per_call: 2}', "unknown key 'launches_per_call'"),
        ("{kind: python}", "missing required key 'callable'"),
        ("{kind: h2d}", "missing required key 'bytes'"),
        ("{kind: d2h, bytes: 0}", "greater than or equal to 1"),
    ],
)
def test_invalid_new_steps(tmp_path, step, message):
    path = write(tmp_path, f"chain:\n  - {step}\n")
    with pytest.raises(ScenarioError, match=message) as info:
        expand_scenario(path)
    assert info.value.file == str(path) and info.value.line == 4


# --- the python step: import beside the scenario file, return contract -------------------------------


def test_import_from_the_scenario_folder(tmp_path):
    folder = tmp_path / "mine"
    (folder / "pkg_lb_test").mkdir(parents=True)
    (folder / "pkg_lb_test" / "__init__.py").write_text("")
    (folder / "pkg_lb_test" / "work.py").write_text("def make(xp, stream, n=1):\n    return lambda: n\n")
    source = str(folder / "s.yaml")
    before = list(sys.path)
    function = load_callable("pkg_lb_test.work:make", source)
    assert function(xp=None, stream=None)() == 1
    assert sys.path == before  # the folder was on sys.path only while importing


def test_missing_module_names_the_file_and_the_callable(tmp_path):
    source = str(tmp_path / "scenario.yaml")
    with pytest.raises(PythonStepError) as info:
        load_callable("no_such_module_lb:f", source)
    text = str(info.value)
    assert (
        source in text
        and "no_such_module_lb:f" in text
        and "ModuleNotFoundError" in text
        and str(tmp_path) in text
    )
    assert isinstance(info.value, LaunchbenchError)


def test_missing_function_and_not_a_function(tmp_path):
    (tmp_path / "lb_mod_missing.py").write_text("VALUE = 3\n")
    source = str(tmp_path / "s.yaml")
    with pytest.raises(PythonStepError, match="has no function 'nope'") as info:
        load_callable("lb_mod_missing:nope", source)
    assert source in str(info.value) and "lb_mod_missing:nope" in str(info.value)
    with pytest.raises(PythonStepError, match="is a int, not a function"):
        load_callable("lb_mod_missing:VALUE", source)


def test_module_that_fails_to_import(tmp_path):
    (tmp_path / "lb_mod_broken.py").write_text("raise RuntimeError('boom at import')\n")
    with pytest.raises(PythonStepError, match="RuntimeError: boom at import"):
        load_callable("lb_mod_broken:f", str(tmp_path / "s.yaml"))


def _run() -> None:
    return None


class _Result:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


@pytest.mark.parametrize(
    ("result", "outputs", "has_reset"),
    [
        (_run, {}, False),
        ({"run": _run}, {}, False),
        ({"run": _run, "outputs": {"y": np.zeros(3)}, "reset": _run}, {"y"}, True),
        (_Result(run=_run, outputs={"a": np.zeros(2), "b": np.ones(2)}), {"a", "b"}, False),
    ],
)
def test_return_forms(result, outputs, has_reset):
    work = normalise_result(result, "m:f", "s.yaml")
    assert work.run is _run and set(work.outputs) == set(outputs) and (work.reset is not None) == has_reset


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (None, "returned NoneType"),
        (3, "returned int"),
        ({"outputs": {}}, "'run' is a NoneType"),
        ({"run": _run, "output": {}}, "unknown key"),
        ({"run": 1}, "not a callable"),
        ({"run": _run, "outputs": [np.zeros(1)]}, "expected a dict"),
        ({"run": _run, "outputs": {"y": [1, 2]}}, "output 'y' is a list"),
        ({"run": _run, "reset": 5}, "'reset' is a int"),
    ],
)
def test_wrong_return_is_refused_with_the_step_named(result, message):
    with pytest.raises(PythonStepError, match=message) as info:
        normalise_result(result, "m:f", "dir/s.yaml")
    assert "dir/s.yaml" in str(info.value) and "'m:f'" in str(info.value)


def test_workload_entry_points_exist():
    source = str(SCENARIOS / "training_step.yaml")
    for spec in (
        "workloads.mlp:training_step",
        "workloads.inference:classify",
        "workloads.preprocess:augment",
        "workloads.own_code:particles",
        "workloads.gemm:Gemm",
    ):
        assert callable(load_callable(spec, source))


# --- the MLP's NumPy reference ---------------------------------------------------------------------


def test_mlp_reference_gradients_match_finite_differences():
    host = mlp.init_host(batch=4, inputs=6, hidden=5, classes=3, seed=1)
    params = {k: host[k].astype(np.float64) for k in mlp.PARAMS}
    _, grads = mlp.reference_step(params, host["x"], host["y"], lr=0.1)
    rng = np.random.default_rng(0)
    eps = 1e-6
    for name in mlp.PARAMS:
        for _ in range(4):
            index = tuple(rng.integers(0, s) for s in params[name].shape)
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            numeric = (
                mlp.reference_loss(plus, host["x"], host["y"])
                - mlp.reference_loss(minus, host["x"], host["y"])
            ) / (2 * eps)
            assert grads[name][index] == pytest.approx(numeric, rel=1e-4, abs=1e-8), name


def test_mlp_reference_step_lowers_the_loss():
    host = mlp.init_host(batch=64, inputs=64, hidden=32, classes=10, seed=0)
    params = {k: host[k] for k in mlp.PARAMS}
    first = mlp.reference_loss(params, host["x"], host["y"])
    for _ in range(20):
        params, grads = mlp.reference_step(params, host["x"], host["y"], lr=0.1)
    assert mlp.reference_loss(params, host["x"], host["y"]) < 0.8 * first
    assert set(grads) == set(mlp.PARAMS)
    assert {k: v.shape for k, v in params.items()} == {k: host[k].shape for k in mlp.PARAMS}


def test_mlp_init_shapes():
    host = mlp.init_host(batch=64, inputs=1024, hidden=1024, classes=10)
    assert host["w1"].shape == (1024, 1024) and host["w3"].shape == (1024, 10) and host["b3"].shape == (10,)
    assert host["x"].dtype == np.float32 and host["y"].sum() == 64 and host["y"].shape == (64, 10)


def test_preprocess_reference_flips_and_normalises():
    images = np.zeros((1, 2, 3, 3), dtype=np.uint8)
    images[0, :, 0, :] = 255  # the left column is white
    out = preprocess.reference(images, contrast=1.0, brightness=0.0)
    assert out.shape == (1, 3, 2, 3)
    assert np.all(out[0, :, :, 2] > 2) and np.all(out[0, :, :, :2] < 0)  # flipped: white is on the right


def test_own_code_is_short_and_documented():
    text = Path(own_code.__file__).read_text()
    assert len(text.splitlines()) < 80 and "out=" in text and '"outputs"' in text
