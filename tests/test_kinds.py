"""The step-kind registry drives the scenario model, the builder, the bytes a step allocates and the graph
node count: every kind comes from its own module in kinds/, and a new module is a new kind."""

from __future__ import annotations

import dataclasses
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from launchbench import kinds
from launchbench.kinds import registry
from launchbench.kinds.base import BuiltStep
from launchbench.run.execute import expected_nodes
from launchbench.scenario.core import Case, MeasureSettings
from launchbench.scenario.model import STEP_FIELDS, Step, step_fields, step_union

# one valid step of every kind (a new kind adds its line here)
EXAMPLES: dict[str, dict[str, Any]] = {
    "empty": {"repeat": 3},
    "scale": {"size": 1000, "dtype": "float64"},
    "add": {"size": 10},
    "fma": {"size": 10, "repeat": 2},
    "reduction": {"size": 100},
    "copy": {"bytes": 64},
    "memset": {"bytes": 64, "value": 1},
    "h2d": {"bytes": 32},
    "d2h": {"bytes": 32},
    "raw": {
        "source": 'extern "C" __global__ void k(float* x) {}',
        "function": "k",
        "grid": 1,
        "block": 32,
        "buffers": {"x": {"size": 8}},
        "args": [{"buffer": "x"}],
    },
    "python": {"callable": "mod:fn", "launches": 4},
    "torch": {"callable": "workloads.decode_torch:decode_step", "args": {"batch": 4}, "launches": 39},
    "while_loop": {"size": 1000, "alpha": 0.5, "threshold": 0.1, "body": 2},
    "axpy": {"size": 100, "temporary": "async", "repeat": 3},
    "all_reduce": {"size": 64, "op": "max"},
    "all_gather": {"size": 64, "dtype": "float64"},
    "reduce_scatter": {"size": 64, "dtype": "int32"},
    "broadcast": {"size": 64, "root": 1},
}
STEP = TypeAdapter(Step)


def _case(*steps: Any) -> Case:
    return Case("s", "c", "c", {}, tuple(steps), MeasureSettings())


def test_every_kind_has_a_module_and_an_example() -> None:
    assert set(registry.SPEC_BY_KIND) == set(EXAMPLES) == set(STEP_FIELDS)
    assert len({spec.model for spec in registry.KINDS}) == len(registry.KINDS)  # one module per model


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


KIND = KindSpec(model=ProbeStep, build=build, nbytes=lambda step: 7 * step.width, nodes_per_launch=2, takes_stream=True)
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
