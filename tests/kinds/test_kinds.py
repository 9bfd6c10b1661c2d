"""The step-kind registry drives the scenario model, the builder, the bytes a step allocates and the graph
node count: every kind comes from its own module in kinds/, and a new module is a new kind."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from launchbench import kinds
from launchbench.kinds import reference, registry
from launchbench.kinds.base import BuiltStep
from launchbench.run.execute import expected_nodes
from launchbench.scenario.core import Case, MeasureSettings
from launchbench.scenario.model import STEP_FIELDS, Step, step_fields, step_union

# one valid step of every kind, from the kind's own module
EXAMPLES: dict[str, dict[str, Any]] = {
    example["kind"]: {key: value for key, value in example.items() if key != "kind"}
    for spec in registry.KINDS
    for example in spec.examples
}
STEP = TypeAdapter(Step)
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import docs  # noqa: E402


def _case(*steps: Any) -> Case:
    return Case("s", "c", "c", {}, tuple(steps), MeasureSettings())


def test_every_kind_has_a_module_and_an_example() -> None:
    assert set(registry.SPEC_BY_KIND) == set(EXAMPLES) == set(STEP_FIELDS)
    assert len({spec.model for spec in registry.KINDS}) == len(registry.KINDS)  # one module per model
    for spec in registry.KINDS:
        assert sorted(example["kind"] for example in spec.examples) == sorted(spec.kinds)
        assert spec.summary


def test_the_scenario_step_union_is_the_registry() -> None:
    """scenario.model's Step is built from the discovered kinds, with no list of its own."""
    union, discriminated = typing.get_args(Step)
    assert set(typing.get_args(union)) == {spec.model for spec in registry.KINDS}
    assert discriminated.discriminator == "kind"
    assert list(STEP_FIELDS) == [kind for spec in registry.KINDS for kind in spec.kinds]


def test_the_kind_table_of_the_scenario_page_is_generated() -> None:
    """docs/scenarios.md holds the table the registry writes (regenerate with python scripts/docs.py)."""
    page = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    assert docs.scenarios_markdown() == page
    table = page.split(reference.BEGIN, 1)[1].split(reference.END, 1)[0]
    for spec in registry.KINDS:
        assert reference.kind_row(spec) in table
    assert "`dtype`: float16/**float32**/float64" in reference.kind_row(registry.SPEC_BY_KIND["scale"])
    assert "`buffers` ({`size`, " in reference.kind_row(registry.SPEC_BY_KIND["raw"])
    assert "`args` ({`buffer`} or {`scalar`, `dtype`: " in reference.kind_row(registry.SPEC_BY_KIND["raw"])


def test_a_broadcast_root_is_refused_by_the_kind_itself() -> None:
    spec = registry.SPEC_BY_KIND["broadcast"]
    root = STEP.validate_python({"kind": "broadcast", "size": 4, "root": 2})
    problem = spec.ranks_problem(root, 2)
    assert problem is not None and problem.key == ("root",)
    assert problem.message == "broadcast root 2 is not a rank: the scenario has devices 0..1"
    assert spec.ranks_problem(root, 3) is None
    empty = STEP.validate_python({"kind": "empty"})
    assert registry.spec_of(empty).ranks_problem(empty, 1) is None  # a kind without rules on ranks


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_the_registry_drives_model_bytes_and_nodes(kind: str) -> None:
    spec = registry.SPEC_BY_KIND[kind]
    step = STEP.validate_python({"kind": kind, **EXAMPLES[kind]})
    assert type(step) is spec.model and registry.spec_of(step) is spec
    assert STEP_FIELDS[kind] == [info.alias or name for name, info in spec.model.model_fields.items()]
    assert registry.step_bytes(step) == spec.nbytes(step) >= 0
    nodes = expected_nodes(_case(step))
    if spec.graph_nodes is not None:
        assert nodes == spec.graph_nodes(step)
    else:
        assert nodes == (None if spec.nodes_per_launch is None else spec.nodes_per_launch * step.launches())
    assert callable(spec.build)


def test_known_bytes_and_node_counts() -> None:
    scale = STEP.validate_python({"kind": "scale", "size": 1000, "dtype": "float64"})
    assert registry.step_bytes(scale) == 1000 * 8 * 2  # the buffer and its initial copy
    fma = STEP.validate_python({"kind": "fma", "size": 10, "repeat": 2})
    empty = STEP.validate_python({"kind": "empty", "repeat": 3})
    assert expected_nodes(_case(fma, empty)) == 5
    reduction = STEP.validate_python({"kind": "reduction", "size": 100})
    assert expected_nodes(_case(empty, reduction)) is None  # CuPy decides a reduction's nodes
    on_aux = STEP.validate_python({"kind": "empty", "stream": 1})
    assert expected_nodes(_case(empty, on_aux)) is None  # fork/join events may add nodes
    axpy = {"kind": "axpy", "size": 10, "repeat": 2}
    preallocated = STEP.validate_python(axpy)
    in_graph_memory = STEP.validate_python({**axpy, "temporary": "async"})
    assert preallocated.launches() == in_graph_memory.launches() == 4  # an allocation is not a launch
    assert expected_nodes(_case(preallocated)) == 4
    assert expected_nodes(_case(in_graph_memory)) == 8  # and an alloc and a free node per launch
    loop = STEP.validate_python({"kind": "while_loop", "size": 8, "repeat": 2})
    assert expected_nodes(_case(loop)) == 6  # copy, check, WHILE node per launch; the loop in its body


PROBE = """
from __future__ import annotations

from typing import Literal

from launchbench.kinds.base import BuiltStep, KindSpec, StepBase


class ProbeStep(StepBase):
    kind: Literal["probe"]
    width: int = 1


def build(step, context, prefix, stream):
    return BuiltStep([lambda: (prefix, stream)] * step.repeat, outputs={prefix: context.rng})


KIND = KindSpec(
    model=ProbeStep,
    build=build,
    nbytes=lambda step: 7 * step.width,
    nodes_per_launch=2,
    takes_stream=True,
    summary="a probe",
    examples=({"kind": "probe", "width": 3},),
)
"""


def test_a_new_kind_is_one_new_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "zz_probe.py").write_text(textwrap.dedent(PROBE))
    monkeypatch.setattr(kinds, "__path__", [*kinds.__path__, str(tmp_path)])
    try:
        specs = registry._discover()
    finally:
        sys.modules.pop(f"{kinds.__name__}.zz_probe", None)
    assert len(specs) == len(registry.KINDS) + 1
    probe = next(spec for spec in specs if spec.kinds == ("probe",))

    step = TypeAdapter(step_union(specs)).validate_python({"kind": "probe", "repeat": 3, "width": 2})
    assert type(step) is probe.model
    assert step_fields(specs)["probe"] == ["repeat", "label", "stream", "kind", "width"]
    assert "| `probe` | `width` = 1 | a probe |" in reference.kind_table(specs).splitlines()

    monkeypatch.setattr(registry, "SPEC_BY_KIND", {**registry.SPEC_BY_KIND, "probe": probe})
    assert registry.step_bytes(step) == 14
    assert expected_nodes(_case(step)) == 6

    @dataclasses.dataclass
    class Context:
        rng: Any = "rng"
        source: str = ""

        def kernel(self, source: str, name: str) -> Any:
            raise AssertionError("the probe compiles nothing")

    built = registry.spec_of(step).build(step, Context(), "step0.probe", "stream")
    assert (
        isinstance(built, BuiltStep) and [call() for call in built.calls] == [("step0.probe", "stream")] * 3
    )


CHILD = """
import sys

from launchbench import kinds

kinds.__path__.append(sys.argv[1])  # before the registry is first imported: as if the module were there

from launchbench.kinds.registry import SPEC_BY_KIND
from launchbench.run.execute import expected_nodes
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import STEP_FIELDS

sys.path.insert(0, sys.argv[3])
import docs

cases = expand_scenario(sys.argv[2])
print(STEP_FIELDS["fill"])
print([(case.case_id, type(case.steps[0]).__name__, expected_nodes(case)) for case in cases])
print(SPEC_BY_KIND["fill"].nbytes(cases[0].steps[0]))
print(next(line for line in docs.scenarios_markdown().splitlines() if line.startswith("| `fill`")))
"""


def _fenced(text: str, marker: str, language: str) -> str:
    """The fenced block of ``language`` that follows the line ``marker`` in ``text``."""
    block = text.split(marker, 1)[1].split(f"```{language}\n", 1)[1]
    return block.split("\n```", 1)[0] + "\n"


def test_the_toy_kind_of_the_contributing_guide_is_one_module(tmp_path: Path) -> None:
    """The guide's fill kind, dropped into the kinds package in a fresh interpreter, is in the Step union,
    the scenario's cases, the memory and node counts and the generated kind table, as the guide shows."""
    import subprocess

    assert "fill" not in registry.SPEC_BY_KIND, "the guide's toy is a real kind now: give the guide another"
    guide = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    kind_dir = tmp_path / "kinds"
    kind_dir.mkdir()
    (kind_dir / "fill.py").write_text(_fenced(guide, "<!-- toy kind:", "python"))
    scenario = tmp_path / "fill.yaml"
    scenario.write_text(_fenced(guide, "<!-- toy scenario:", "yaml"))
    child = [sys.executable, "-c", CHILD, str(kind_dir), str(scenario), str(ROOT / "scripts")]
    result = subprocess.run(child, capture_output=True, text=True, check=False, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    fields, cases, nbytes, row = result.stdout.splitlines()
    assert fields == "['repeat', 'label', 'stream', 'kind', 'size', 'dtype', 'value']"
    assert cases == str([(f"fill/length={n}", "FillStep", n) for n in (1, 10, 100, 1000)])
    assert nbytes == str(100_000 * 4 * 2)
    assert row in guide.split("adds this row", 1)[1]  # the row the guide shows is the one generated
