"""The pytest plugin on a CPU (pytester, the scripted backend in this process): the fixture skips without a
GPU with the reason; --launchbench-save keeps the runs; --launchbench-compare with --launchbench-fail-on
passes and fails on recorded runs; bad options are one usage error; a session that does not use the
plugin loads none of launchbench."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from launchbench import pytest_plugin
from launchbench.pytest_plugin import callable_spec, run_name, scenario_of

pytest_plugins = ("pytester",)

TEST_FILE = '''
def test_empty(launchbench):
    result = launchbench.measure("""
sweep:
  length: [10]
chain:
  - kind: empty
    repeat: $length
""", max_time=0.2, isolate=False)
    assert result.speedup("graph") > 2
    assert result.outputs_match
    assert result.case("chain/length=10").modes == ("eager", "graph")
'''
FAKE = ("--launchbench-backend", "fakes:scripted_backend")
SLOW = ("--launchbench-backend", "fakes:slow_graph_backend")
GATE = ("--launchbench-fail-on", "wall_us_per_iter:5%")


@pytest.fixture(autouse=True, scope="module")
def _loaded(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A run and a comparison in this process first: pytester's inline runs give back the modules they
    loaded, and NumPy's extension cannot load twice in one process."""
    from launchbench import api

    folder = tmp_path_factory.mktemp("warm")
    chain = "name: warm\ndescription: w\nchain:\n  - kind: empty\n"
    run = api.run(chain, out_dir=folder / "r", max_time=0.1, passes=1, isolate=False, backend=FAKE[1])
    api.compare(run, run, fail_on="wall_us_per_iter:5%")


def test_the_fixture_skips_without_a_gpu_with_the_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pytest_plugin, "gpu_problem", lambda: "CuPy sees no CUDA device")
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*launchbench: needs a GPU: CuPy sees no CUDA device*"])


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed here")
def test_without_cupy_the_reason_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*launchbench: needs a GPU: CuPy is not importable (ModuleNotFoundError)*"])


def test_save_keeps_each_tests_run_under_its_id(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_saved=TEST_FILE)
    result = pytester.runpytest(*FAKE, "--launchbench-save", "saved")
    result.assert_outcomes(passed=1)
    run = pytester.path / "saved" / "test_saved.py_test_empty"
    assert (run / "results.json").is_file() and (run / "results.csv").is_file()
    assert "name: test_saved.py_test_empty" in (run / "scenario.yaml").read_text()


def _saved(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_saved=TEST_FILE)
    pytester.runpytest(*FAKE, "--launchbench-save", "saved").assert_outcomes(passed=1)


def test_compare_passes_a_run_like_the_saved_one(pytester: pytest.Pytester) -> None:
    _saved(pytester)
    result = pytester.runpytest(*FAKE, "--launchbench-compare", "saved", *GATE)
    result.assert_outcomes(passed=1)


def test_compare_fails_the_test_that_regressed_beyond_the_rule(pytester: pytest.Pytester) -> None:
    _saved(pytester)
    result = pytester.runpytest(*SLOW, "--launchbench-compare", "saved", *GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*launchbench: regressed against saved*test_saved.py_test_empty:",
            "*chain/length=10 [[]graph[]] wall_us_per_iter:5%: slower by at least 5%*",
        ]
    )


def test_a_rule_looser_than_the_regression_passes(pytester: pytest.Pytester) -> None:
    _saved(pytester)
    result = pytester.runpytest(
        *SLOW, "--launchbench-compare", "saved", "--launchbench-fail-on", "wall_us_per_iter:200%"
    )
    result.assert_outcomes(passed=1)


def test_compare_without_a_rule_never_fails(pytester: pytest.Pytester) -> None:
    _saved(pytester)
    pytester.runpytest(*SLOW, "--launchbench-compare", "saved").assert_outcomes(passed=1)


def test_a_test_with_no_saved_run_is_warned_about(pytester: pytest.Pytester) -> None:
    (pytester.path / "saved").mkdir()
    pytester.makepyfile(test_saved=TEST_FILE)
    result = pytester.runpytest(*FAKE, "--launchbench-compare", "saved", *GATE)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(
        ["*launchbench: no saved run saved*test_saved.py_test_empty to compare with (reading)*"]
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (GATE, "*--launchbench-fail-on needs --launchbench-compare DIR*"),
        (
            ("--launchbench-compare", "nosuch"),
            "*--launchbench-compare nosuch: no such directory (reading the saved runs)*",
        ),
        (
            ("--launchbench-compare", ".", "--launchbench-fail-on", "wall_us_per_iter"),
            "*--launchbench-fail-on wall_us_per_iter: *",
        ),
        (
            ("--launchbench-compare", ".", "--launchbench-save", "."),
            "*--launchbench-save and --launchbench-compare name one directory*",
        ),
        (("--launchbench-allow", "everything"), "*invalid choice: 'everything'*"),
        (
            ("--launchbench-compare", ".", "--launchbench-fail-on", "mean:5%"),
            "ERROR: --launchbench-fail-on mean:5%: unknown metric 'mean'; metrics: wall_us_per_launch, *",
        ),
    ],
)
def test_bad_options_are_one_usage_error(
    pytester: pytest.Pytester, options: tuple[str, ...], message: str
) -> None:
    pytester.makepyfile(TEST_FILE)
    result = pytester.runpytest(*FAKE, *options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Traceback" not in result.stderr.str()


def test_a_bad_chain_fails_the_test_in_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "def test_bad(launchbench):\n    launchbench.measure('chain:\\n  - kind: nosuch\\n', isolate=False)\n"
    )
    result = pytester.runpytest(*FAKE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*launchbench: *scenario.yaml*nosuch*"])


def test_a_function_is_measured_as_a_python_step(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_own="def work(xp, stream, n):\n    return lambda: None\n\n"
        "def test_own(launchbench):\n"
        "    run = launchbench.measure(work, args={'n': 4}, launches=2, max_time=0.2, isolate=False)\n"
        "    assert run.record.cases[0].kinds == 'python' and run.record.cases[0].launches_per_iter == 2\n"
    )
    pytester.runpytest(*FAKE).assert_outcomes(passed=1)


def test_a_session_without_the_fixture_loads_no_launchbench(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import sys\n\ndef test_light():\n"
        "    loaded = [m for m in sys.modules if m.startswith(('launchbench.', 'pandas', 'cupy'))]\n"
        "    assert loaded == ['launchbench.pytest_plugin'], loaded\n"
    )
    pytester.runpytest_subprocess().assert_outcomes(passed=1)


# ------------------------------------------------------------------------------------ the pieces


def test_the_entry_point_names_the_plugin() -> None:
    """pyproject.toml's pytest11 entry point, as installed (`pip install -e .` registers it)."""
    from importlib.metadata import entry_points

    (point,) = [p for p in entry_points(group="pytest11") if p.name == "launchbench"]
    assert point.value == "launchbench.pytest_plugin" and point.load() is pytest_plugin


def work(xp: object, stream: object) -> None:
    return None


def test_a_function_at_a_modules_top_level_is_its_spec() -> None:
    assert callable_spec(work) == f"{__name__}:work"
    with pytest.raises(TypeError, match="not a function at the top level"):
        callable_spec(lambda xp, stream: None)


def test_a_snippet_gets_the_tests_name_and_keeps_its_own_keys() -> None:
    scenario = scenario_of("chain:\n  - kind: empty\nmeasure: {passes: 2}\n", "t", {}, 1)
    assert scenario["name"] == "t" and scenario["measure"] == {"passes": 2}
    with pytest.raises(TypeError, match="holds a list"):
        scenario_of("- kind: empty\n", "t", {}, 1)


def test_a_test_id_is_one_folder_name() -> None:
    assert run_name("tests/test_x.py::test_a[p1-2]") == "tests_test_x.py_test_a_p1-2"
    assert "/" not in run_name("../../etc::x")
    assert Path(run_name("../../etc::x")).name == run_name("../../etc::x")


def test_the_plugins_allow_choices_are_the_apis_allow_names():
    """The plugin keeps its own copy (it imports nothing of launchbench when loaded): the same names."""
    from launchbench import pytest_plugin
    from launchbench.api import ALLOW_NAMES

    assert pytest_plugin.ALLOWED == ALLOW_NAMES
