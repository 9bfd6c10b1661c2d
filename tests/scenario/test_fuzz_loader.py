"""Fuzz the scenario loader: whatever the document, expand_scenario returns cases or raises a
LaunchbenchError (shown as one line, exit 2). Any other exception is a loader bug.

Three sources of documents: arbitrary nested YAML data, scenario-shaped documents with random values and
random damage (the inputs most likely to get deep into validation and expansion), and raw text/bytes.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launchbench.errors import LaunchbenchError
from launchbench.scenario.core import Case
from launchbench.scenario.expand import expand_scenario
from launchbench.scenario.model import STEP_FIELDS, STEP_KINDS

FIELDS = sorted({f for fields in STEP_FIELDS.values() for f in fields})
TOP_KEYS = [
    "name",
    "description",
    "params",
    "defaults",
    "sweep",
    "chains",
    "chain",
    "measure",
    "expect",
    "max_cases",
]
WORDS = [
    "n",
    "size",
    "length",
    "x",
    "a",
    "start",
    "stop",
    "num",
    "scale",
    "integer",
    "buffer",
    "scalar",
    "metric",
]

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
numbers = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-3, max_value=3000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 0.5, 1.5, 1024, 2048, 1e308, -1e308, 2**31, 10**18, 10**19]),
)
references = st.sampled_from(
    [
        "$n",
        "$size",
        "$length",
        "$nope",
        "${n}",
        "${n * 2}",
        "${size // 0}",
        "${nope}",
        "$",
        "${",
        "${n ** 64}",
        "${(10**64)**64 * (10**64)**64}",
        "x${(10**64)**64 * (10**64)**64}",
        "${max()}",
        "${n * 1e308 * 10}",
        "${ceil(n / 3)}",
    ]
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    numbers,
    text,
    references,
    st.sampled_from(
        [*STEP_KINDS, "float16", "float32", "int8", "log", "linear", "graph", "eager", "1e6", "1.0e400"]
    ),
)
keys = st.one_of(
    st.sampled_from(TOP_KEYS + FIELDS + WORDS), text, st.integers(-5, 5), st.booleans(), st.none()
)
nested = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=25,
)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = scalars) -> st.SearchStrategy[Any]:
    """Usually a plausible value, sometimes anything: documents must get past the first error to test expansion."""
    return st.sampled_from([False] * 12 + [True]).flatmap(lambda damaged: bad if damaged else good)


def rarely(draw: st.DrawFn, one_in: int = 5) -> bool:
    return draw(st.sampled_from([False] * (one_in - 1) + [True]))  # hypothesis favours the first element


plausible_ints = st.one_of(
    st.integers(1, 4096), st.sampled_from(["$n", "$size", "$length", "${n * 2}", "${size}"])
)
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "repeat": mostly(plausible_ints, numbers),
    "size": mostly(plausible_ints, numbers),
    "bytes": mostly(plausible_ints, numbers),
    "value": mostly(st.integers(0, 255), numbers),
    "grid": mostly(
        st.one_of(st.integers(1, 64), st.lists(st.integers(1, 64), min_size=1, max_size=3)), numbers
    ),
    "block": mostly(
        st.one_of(st.integers(1, 1024), st.lists(st.integers(1, 32), min_size=1, max_size=3)), numbers
    ),
    "alpha": mostly(st.floats(-2, 2), numbers),
    "dtype": mostly(st.sampled_from(["float16", "float32", "float64", "int8"])),
    "label": mostly(st.sampled_from(["x", "n=${n}", "$n"])),
    "source": mostly(st.just('extern "C" __global__ void k(float* x) {}')),
    "function": mostly(st.just("k")),
    "shared_mem": mostly(st.integers(0, 1024), numbers),
    "options": mostly(st.lists(st.sampled_from(["-O3", "--use_fast_math"]), max_size=2)),
    "op": mostly(st.just("sum")),
    "buffers": mostly(
        st.dictionaries(
            st.sampled_from(["x", "y"]),
            st.fixed_dictionaries({"size": mostly(plausible_ints, numbers)}),
            max_size=2,
        ),
        nested,
    ),
    "args": mostly(
        st.lists(
            st.one_of(
                st.fixed_dictionaries({"buffer": st.sampled_from(["x", "y", "z"])}),
                st.fixed_dictionaries({"scalar": mostly(st.floats(-10, 10), numbers)}),
            ),
            max_size=3,
        ),
        nested,
    ),
}


@st.composite
def steps(draw: st.DrawFn) -> Any:
    if rarely(draw, 40):
        return draw(nested)
    kind = draw(mostly(st.sampled_from(STEP_KINDS), st.sampled_from(["reduce", None, 3, "RAW"])))
    step: dict[Any, Any] = {} if kind is None else {"kind": kind}
    allowed = STEP_FIELDS.get(kind, FIELDS) if isinstance(kind, str) else FIELDS
    required = {
        "scale": ["size"],
        "add": ["size"],
        "fma": ["size"],
        "reduction": ["size"],
        "copy": ["bytes"],
        "memset": ["bytes"],
    }
    chosen = list(required.get(kind, []) if isinstance(kind, str) else []) + draw(
        st.lists(st.sampled_from(allowed), max_size=4)
    )
    if kind == "raw":
        chosen += ["source", "function", "grid", "block", "buffers", "args"]
    for field in chosen:
        if field != "kind":
            step[field] = draw(VALUES.get(field, scalars))
    if rarely(draw, 20):
        step[draw(st.sampled_from(["sise", "kind", *FIELDS]))] = draw(scalars)
    return step


@st.composite
def sweep_axis(draw: st.DrawFn) -> Any:
    choice = draw(st.sampled_from(["list", "range", "list", "range", "anything"]))
    if choice == "list":
        return draw(st.lists(mostly(st.integers(1, 5000), numbers), min_size=1, max_size=5))
    if choice == "range":
        rng: dict[str, Any] = {
            "start": draw(mostly(st.integers(1, 100), numbers)),
            "stop": draw(mostly(st.integers(1, 10**6), numbers)),
            "num": draw(mostly(st.integers(1, 12), numbers)),
        }
        if draw(st.booleans()):
            rng["scale"] = draw(mostly(st.sampled_from(["log", "linear"])))
        if draw(st.booleans()):
            rng["integer"] = draw(mostly(st.booleans()))
        return rng
    return draw(nested)


@st.composite
def scenario_like(draw: st.DrawFn) -> dict[Any, Any]:
    doc: dict[Any, Any] = {
        "name": draw(mostly(st.sampled_from(["fuzz", "a.b-c_1"]))),
        "description": draw(mostly(st.just("fuzzed"))),
    }
    if draw(st.booleans()):
        doc["params"] = draw(
            st.dictionaries(
                st.sampled_from(["n", "size", "length", "dt"]),
                mostly(st.integers(1, 100), scalars),
                max_size=3,
            )
        )
    if draw(st.booleans()):
        axes = mostly(st.sampled_from(["n", "size", "length"]), st.just("bad axis"))
        doc["sweep"] = draw(st.dictionaries(axes, sweep_axis(), max_size=3))
    if rarely(draw, 3):
        doc["defaults"] = draw(
            st.dictionaries(st.sampled_from([*FIELDS, "dtpye"]), mostly(plausible_ints), max_size=3)
        )
    chain_names = mostly(st.sampled_from(["a", "b", "c"]), st.sampled_from(["c/d", "", " "]))
    chains = draw(
        st.dictionaries(chain_names, st.lists(steps(), min_size=1, max_size=4), min_size=1, max_size=3)
    )
    if rarely(draw, 4):
        doc["chain"] = draw(st.lists(steps(), min_size=1, max_size=3))
        if rarely(draw, 10):
            doc["chains"] = chains
    else:
        doc["chains"] = chains
    if rarely(draw, 3):
        doc["measure"] = draw(
            st.dictionaries(
                st.sampled_from(["max_time", "min_samples", "target_noise", "bogus"]),
                mostly(st.floats(0.01, 1), numbers),
                max_size=3,
            )
        )
    if rarely(draw, 3):
        expectation = st.fixed_dictionaries(
            {"metric": st.just("wall_us_per_launch"), "max": mostly(st.floats(0, 10), numbers)}
        )
        doc["expect"] = draw(st.lists(mostly(expectation, nested), max_size=2))
    if rarely(draw, 3):
        doc["max_cases"] = draw(mostly(st.integers(1, 2000), scalars))
    if rarely(draw, 8):  # random damage
        doc[draw(keys)] = draw(nested)
    return doc


def _check(path: Path) -> None:
    try:
        cases = expand_scenario(path)
    except LaunchbenchError as err:
        assert str(path) in str(err)
        assert "\n" not in str(err), str(err)  # one line on stderr
        return
    except Exception as err:  # noqa: BLE001 - the point of the test
        raise AssertionError(
            f"loader raised {type(err).__name__}: {err}\n--- document ---\n{path.read_bytes()[:2000]!r}"
        ) from err
    assert all(isinstance(c, Case) for c in cases)


def _check_document(doc: Any) -> None:
    try:
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return  # not representable (never happens for these strategies, but not the loader's business)
    _check_text(text.encode("utf-8"))


def _check_text(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_bytes(data)
        _check(path)


FUZZ = settings(
    max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@FUZZ
@given(nested)
def test_arbitrary_yaml_data(doc):
    _check_document(doc)


@FUZZ
@given(scenario_like())
def test_scenario_shaped_documents(doc):
    _check_document(doc)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [*"ab:- \n\t[]{},&*!|>'\"#%@`?$0.9e\\", "!!python/object:os.system ", "<<: ", "&x ", "*x", "\n  "]
        ),
        max_size=60,
    ).map("".join)
)
def test_yaml_like_text(source):
    _check_text(source.encode("utf-8"))


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes(data):
    _check_text(data)
