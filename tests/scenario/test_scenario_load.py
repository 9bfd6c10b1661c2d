"""Good-path loading and expansion: sweeps, ranges, defaults, parameter references, case ids, max_cases."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from launchbench.errors import ScenarioError
from launchbench.kinds.elementwise import ElementwiseStep
from launchbench.kinds.empty import EmptyStep
from launchbench.kinds.raw import RawStep
from launchbench.scenario.expand import expand_loaded, expand_scenario
from launchbench.scenario.load import load_scenario, load_scenario_file
from launchbench.scenario.messages import ScenarioSource, Translator, format_path
from launchbench.scenario.model import SweepRange
from launchbench.scenario.sweep import axis_values
from launchbench.scenario.yaml_safe import parse_yaml

ROOT = Path(__file__).resolve().parents[2]
HEAD = "name: t\ndescription: a test scenario\n"


def write(tmp_path: Path, body: str, head: str = HEAD, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(head + textwrap.dedent(body), encoding="utf-8")
    return path


def by_id(cases):
    return {c.case_id: c for c in cases}


def test_quickstart():
    cases = expand_scenario(ROOT / "scenarios" / "quickstart.yaml")
    ids = [c.case_id for c in cases]
    assert ids == [f"{chain}/length={n}" for chain in ("empty", "scale") for n in (1, 10, 100, 1000)]
    case = by_id(cases)["scale/length=100"]
    assert case.scenario == "quickstart"
    assert case.chain == "scale"
    assert case.params == {"length": 100}
    assert case.axes == ("length",)
    assert case.launches_per_iter == 100
    assert case.kinds == "scale"
    (step,) = case.steps
    assert isinstance(step, ElementwiseStep) and step.size == 500_000 and step.repeat == 100
    assert case.source == str(ROOT / "scenarios" / "quickstart.yaml")


def test_scenario_without_sweep_has_one_case_per_chain(tmp_path):
    path = write(
        tmp_path,
        """\
        chains:
          a:
            - kind: empty
          b:
            - kind: copy
              bytes: 4096
            - kind: memset
              bytes: 4096
              value: 7
        """,
    )
    cases = expand_scenario(path)
    assert [c.case_id for c in cases] == ["a", "b"]
    assert cases[1].kinds == "copy+memset"
    assert cases[1].params == {} and cases[1].axes == ()
    assert load_scenario(path).name == "t"


def test_single_chain_is_named_chain(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          n: [1, 2]
        chain:
          - kind: empty
            repeat: $n
        """,
    )
    assert [c.case_id for c in expand_scenario(path)] == ["chain/n=1", "chain/n=2"]


def test_chain_varies_only_along_the_axes_it_references(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          size: [1000, 2000]
          length: [1, 10, 100]
        chains:
          empty:
            - kind: empty
              repeat: $length
          scale:
            - kind: scale
              size: $size
              repeat: $length
          fixed:
            - kind: reduction
              size: 64
        """,
    )
    cases = expand_scenario(path)
    assert len(cases) == 3 + 6 + 1
    ids = [c.case_id for c in cases]
    assert ids[:3] == ["empty/length=1", "empty/length=10", "empty/length=100"]
    assert "scale/size=2000,length=10" in ids  # axes in the order the sweep gives them
    assert ids[-1] == "fixed"
    case = by_id(cases)["scale/size=2000,length=10"]
    assert case.params == {"size": 2000, "length": 10}
    assert case.steps[0].size == 2000 and case.launches_per_iter == 10


def test_max_cases_counts_only_the_cases_made(tmp_path):
    # 3 + 6 + 1 = 10 cases, although 2 × 3 × 3 chains would be 18
    path = write(
        tmp_path,
        """\
        max_cases: 10
        sweep:
          size: [1000, 2000]
          length: [1, 10, 100]
        chains:
          empty:
            - kind: empty
              repeat: $length
          scale:
            - kind: scale
              size: $size
              repeat: $length
          fixed:
            - kind: empty
        """,
    )
    assert len(expand_scenario(path)) == 10
    with pytest.raises(ScenarioError, match="the sweep makes 10 cases, above the limit of 9"):
        expand_scenario(path, max_cases=9)


def test_max_cases_argument_overrides_the_file(tmp_path):
    path = write(
        tmp_path,
        """\
        max_cases: 2
        sweep:
          n: [1, 2, 3]
        chain:
          - kind: empty
            repeat: $n
        """,
    )
    with pytest.raises(ScenarioError, match="3 cases, above the limit of 2") as info:
        expand_scenario(path)
    assert info.value.line == 4 and info.value.key_path == "sweep"
    assert len(expand_scenario(path, max_cases=3)) == 3
    loaded = load_scenario_file(path)
    assert len(expand_loaded(loaded, max_cases=100)) == 3


def test_default_max_cases_is_1000(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          a: {start: 1, stop: 1000, num: 1000, scale: linear}
        chain:
          - kind: empty
            repeat: $a
        """,
    )
    assert len(expand_scenario(path)) == 1000
    path.write_text(path.read_text().replace("stop: 1000, num: 1000", "stop: 1001, num: 1001"))
    with pytest.raises(ScenarioError, match="1,001 cases, above the limit of 1,000"):
        expand_scenario(path)


def test_log_range():
    assert axis_values("n", SweepRange(start=1, stop=1000, num=4)) == [1, 10, 100, 1000]
    assert axis_values("n", SweepRange(start=1000, stop=1, num=4)) == [1000, 100, 10, 1]
    values = axis_values("n", SweepRange(start=1, stop=100, num=3, integer=False))
    assert values == pytest.approx([1.0, 10.0, 100.0])


def test_linear_range_and_rounding():
    assert axis_values("n", SweepRange(start=0, stop=10, num=6, scale="linear")) == [0, 2, 4, 6, 8, 10]
    # integer rounding can make equal values: each is kept once
    assert axis_values("n", SweepRange(start=1, stop=2, num=5, scale="linear")) == [1, 2]
    assert axis_values("n", SweepRange(start=5, stop=9, num=1)) == [5]
    assert axis_values("n", SweepRange(start=0, stop=1, num=3, scale="linear", integer=False)) == [
        0.0,
        0.5,
        1.0,
    ]


def test_list_values_keep_order_and_lose_repeats():
    assert axis_values("n", [10, 1, 10, 100]) == [10, 1, 100]


def test_range_in_a_file(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          size: {start: 1024, stop: 1048576, num: 3}
          alpha: {start: 0.5, stop: 1.5, num: 3, scale: linear, integer: false}
        chain:
          - kind: fma
            size: $size
            alpha: $alpha
        """,
    )
    cases = expand_scenario(path)
    assert len(cases) == 9
    assert "chain/size=32768,alpha=1" in by_id(cases)  # integral floats print as integers
    assert "chain/size=1024,alpha=0.5" in by_id(cases)
    assert by_id(cases)["chain/size=1024,alpha=1.5"].steps[0].alpha == 1.5


def test_params_and_references(tmp_path):
    path = write(
        tmp_path,
        """\
        params:
          n: 3
          dt: float16
          tag: warm
        chain:
          - kind: scale
            size: 1024
            dtype: $dt
            repeat: $n
            label: "scale-${n}-$tag"
        """,
    )
    (case,) = expand_scenario(path)
    step = case.steps[0]
    assert step.dtype == "float16" and step.repeat == 3
    assert step.label == "scale-3-$tag"  # only ${name} is substituted inside a longer string
    assert case.params == {}  # parameters are not axes


def test_sweep_overrides_a_numeric_param(tmp_path):
    path = write(
        tmp_path,
        """\
        params:
          n: 5
        sweep:
          n: [1, 2]
        chain:
          - kind: empty
            repeat: $n
        """,
    )
    assert [c.steps[0].repeat for c in expand_scenario(path)] == [1, 2]


def test_defaults_apply_to_steps_that_take_them(tmp_path):
    path = write(
        tmp_path,
        """\
        defaults:
          dtype: float64
          repeat: 4
          size: 256
        chain:
          - kind: empty
          - kind: scale
          - kind: reduction
            dtype: float16
          - kind: copy
            bytes: 64
        """,
    )
    (case,) = expand_scenario(path)
    empty, scale, reduction, copy = case.steps
    assert isinstance(empty, EmptyStep) and empty.repeat == 4
    assert scale.dtype == "float64" and scale.size == 256
    assert reduction.dtype == "float16"  # a step's own value wins
    assert copy.repeat == 4 and copy.bytes == 64
    assert case.launches_per_iter == 16


def test_reference_in_defaults_makes_an_axis(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          size: [100, 200]
        defaults:
          size: $size
        chains:
          s:
            - kind: scale
        """,
    )
    assert [c.case_id for c in expand_scenario(path)] == ["s/size=100", "s/size=200"]


def test_numbers_written_as_floats_and_exponents(tmp_path):
    path = write(
        tmp_path,
        """\
        chain:
          - kind: scale
            size: 1e6
            repeat: 2.0
            alpha: 5e-1
          - kind: copy
            bytes: 1.5e+3
        """,
    )
    (case,) = expand_scenario(path)
    scale, copy = case.steps
    assert scale.size == 1_000_000 and isinstance(scale.size, int)
    assert scale.repeat == 2 and scale.alpha == 0.5
    assert copy.bytes == 1500


def test_raw_step(tmp_path):
    path = write(
        tmp_path,
        """\
        chain:
          - kind: raw
            source: |
              extern "C" __global__ void k(float* x, float a) { x[threadIdx.x] *= a; }
            function: k
            grid: [2, 1]
            block: [32, 32]
            buffers:
              x: {size: 2048, init: ones}
            args:
              - buffer: x
              - scalar: 2.5
        """,
    )
    (case,) = expand_scenario(path)
    step = case.steps[0]
    assert isinstance(step, RawStep)
    assert step.grid == (2, 1) and step.block == (32, 32)
    assert step.buffers["x"].size == 2048
    assert step.args[1].scalar == 2.5


def test_measure_and_expect(tmp_path):
    path = write(
        tmp_path,
        """\
        measure:
          max_time: 0.5
          min_samples: 5
        chain:
          - kind: empty
        expect:
          - case: "chain"
            metric: wall_us_per_launch
            max: 2
        """,
    )
    scenario = load_scenario(path)
    assert scenario.measure.max_time == 0.5 and scenario.measure.min_samples == 5
    assert scenario.expect[0].max == 2.0 and scenario.expect[0].mode == "graph"
    assert expand_scenario(path)[0].measure.max_time == 0.5


def test_aliases_and_merge_keys(tmp_path):
    path = write(
        tmp_path,
        """\
        params:
          base: 1
        chains:
          a:
            - &step {kind: scale, size: 100, dtype: float64}
            - *step
          b:
            - <<: *step
              size: 200
        """,
    )
    cases = by_id(expand_scenario(path))
    assert [s.size for s in cases["a"].steps] == [100, 100]
    assert cases["b"].steps[0].size == 200 and cases["b"].steps[0].dtype == "float64"


def test_lines_map_key_paths(tmp_path):
    path = write(
        tmp_path,
        """\
        sweep:
          n: [1, 2]
        chains:
          a:
            - kind: empty
              repeat: $n
        """,
    )
    lines = load_scenario_file(path).lines
    assert lines[("name",)] == 1
    assert lines[("sweep", "n")] == 4
    assert lines[("chains", "a", 0)] == 7
    assert lines[("chains", "a", 0, "repeat")] == 8


def test_parse_yaml_keeps_typed_keys():
    data, lines = parse_yaml("a:\n  2: x\n  '2': y\n  null: z\n", "f.yaml")
    assert data == {"a": {2: "x", "2": "y", None: "z"}}
    assert lines[("a", 2)] == 2 and lines[("a", "2")] == 3 and lines[("a", None)] == 4
    with pytest.raises(ScenarioError, match="duplicate key"):  # 1 and true are one key to Python
        parse_yaml("a:\n  1: x\n  true: y\n", "f.yaml")


def test_bom_and_crlf(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + "chain:\n  - kind: empty\n").replace("\n", "\r\n").encode())
    assert [c.case_id for c in expand_scenario(path)] == ["chain"]


def test_moderate_aliases_are_fine(tmp_path):
    # 3 levels of 10 aliases: 1000 values, well under the limit
    lines = [HEAD.rstrip("\n"), 'l0: &l0 ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]']
    for i in range(1, 3):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    path = tmp_path / "s.yaml"
    path.write_text("\n".join(lines) + "\nchain:\n  - kind: empty\n")
    with pytest.raises(ScenarioError, match="unknown key 'l0'"):  # expanded fine; then refused as keys
        expand_scenario(path)


def test_every_scenario_shipped_in_the_repo_loads():
    files = [p for p in ROOT.glob("scenarios/*.yaml")] + [
        p for p in ROOT.glob("tests/data/*/*.yaml") if p.parent.name != "bad"
    ]
    assert files
    for path in files:
        assert expand_scenario(path), path


def test_a_sweep_axis_in_defaults_multiplies_only_the_chains_whose_steps_take_it(tmp_path):
    path = write(
        tmp_path,
        """\
        defaults:
          size: $size
        sweep:
          size: [1000, 2000]
        chains:
          empty:
            - kind: empty
          scale:
            - kind: scale
        """,
    )
    assert [c.case_id for c in expand_scenario(path)] == ["empty", "scale/size=1000", "scale/size=2000"]


def test_a_text_parameter_is_spliced_into_a_string(tmp_path):
    path = write(
        tmp_path,
        """\
        params:
          tag: warm
          n: 4
        chain:
          - kind: empty
            label: "run-${tag}-${n * 2}"
        """,
    )
    assert expand_scenario(path)[0].steps[0].label == "run-warm-8"


def test_a_run_records_the_hash_of_the_bytes_it_loaded():
    import hashlib

    from launchbench.run.runner import plan

    path = ROOT / "scenarios" / "quickstart.yaml"
    (info,) = plan([str(path)], None, None).scenarios
    assert info.sha256 == load_scenario_file(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


# --- messages.py: the pieces other modules share ---------------------------------------------------------


def test_translator_asks_the_type_then_the_general_rules_then_the_default():
    words = Translator[int, str](
        by_type={"a": lambda n: "by type" if n > 0 else None},
        general=(lambda n: "general" if n > -5 else None,),
        default=lambda n: "default",
    )
    assert words("a", 1) == "by type"
    assert words("a", 0) == "general"  # the type's formatter declines: the general rule answers
    assert words("b", 1) == "general"  # no formatter for the type
    assert words("a", -9) == "default"


def test_a_source_finds_the_nearest_line_and_where_a_chain_stands():
    single = ScenarioSource("s.yaml", {(): 1, ("chain",): 3, ("chain", 0): 4, ("chain", 0, "size"): 4})
    assert single.single_chain and single.chain_path("chain") == ("chain",)
    assert single.nearest_line(("chain", 0, "size", "x", 2)) == 4
    assert single.nearest_line(("sweep", "n")) is None
    named = ScenarioSource("s.yaml", {("chains",): 3, ("chains", "a"): 4})
    assert not named.single_chain and named.chain_path("a") == ("chains", "a")
    over = named.with_lines({("chains", "a", 0, "size"): 9})
    assert over.lines[("chains", "a", 0, "size")] == 9 and over.lines[("chains", "a")] == 4
    error = named.error("bad", ("chains", "a", 0))
    assert str(error) == "s.yaml at 'chains.a[0]': bad" and error.line is None
    assert str(named.error("bad", ("chains", "a"))) == "s.yaml:4 at 'chains.a': bad"
    assert format_path(()) == "" and format_path(("sweep", "n", 0, "start")) == "sweep.n[0].start"


def test_the_messages_module_loads_no_scenario_model():
    """results/ reads its errors through messages.py; comparing runs must not load the step kinds."""
    code = (
        "import sys, launchbench.scenario.messages, launchbench.results.store\n"
        "print(sorted(m for m in ('launchbench.scenario.model', 'launchbench.kinds.registry', 'yaml')"
        " if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
