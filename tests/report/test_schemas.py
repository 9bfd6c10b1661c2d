"""The JSON Schemas: generated from the models and current, shipped in the package and published under
docs/schemas/, and every JSON output valid against its published schema; the scenario schema accepts
every committed scenario and refuses the bad ones' structural faults."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from builders import make_run
from click.testing import CliRunner, Result
from committed_runs import committed_results, results_bytes
from jsonschema import Draft202012Validator, ValidationError, validators

from launchbench.cli import cli
from launchbench.report.comparison_table import DATA_KEYS
from launchbench.report.documents import ComparisonLine
from launchbench.report.json_schemas import SCHEMAS, file_name, schema_text, shipped_schema
from launchbench.results.schema import SCHEMA_VERSION
from launchbench.results.store import write_run
from launchbench.scenario.load import load_scenario_file, parse_yaml

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parents[1] / "data"
H200 = DATA / "h200"
sys.path.insert(0, str(ROOT / "scripts"))
import docs  # noqa: E402

# faults of the tests/data/bad files that are the document's structure: an unknown key, a wrong type, a
# required key missing (the others are checks across fields or values the schema cannot express)
STRUCTURAL = {
    "unknown key": [
        "unknown-top-key", "unknown-step-key", "unknown-measure-key", "unknown-expect-key",
        "unknown-sweep-range-key", "unknown-buffer-key", "unknown-defaults-key", "kind-in-defaults",
        "shapes-unknown-key", "unknown-step-kind",
    ],
    "wrong type": [
        "bool-repeat", "bool-size", "string-size", "float-size", "quoted-number", "step-not-mapping",
        "chain-not-list", "step-kind-not-string", "sweep-not-list", "sweep-string-values", "param-bool",
        "raw-scalar-bool", "shapes-strategy-typo", "expect-mode-unknown", "yaml11-bool-flag",
    ],
    "missing or empty": [
        "chains-missing", "description-missing", "step-without-kind", "chains-empty", "chain-no-steps",
        "single-chain-no-steps", "chain-and-chains",
    ],
}  # fmt: skip


_ITEMS = Draft202012Validator.VALIDATORS["items"]


def _items(validator: Any, items: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """Draft 2020-12's ``items``, without its descent into each item where the item schema is one type
    (``{"type": "number"}``: a results file's sample lists, most of what it holds) and every item is of
    that type: the one check that descent makes, by the same type checker. Any other schema, and an
    array with an item of another type, goes through the keyword itself, so every error is its own."""
    single = isinstance(items, dict) and items.keys() == {"type"} and isinstance(items["type"], str)
    if (
        single
        and validator.is_type(instance, "array")
        and all(validator.is_type(i, items["type"]) for i in instance)
    ):
        return
    yield from _ITEMS(validator, items, instance, schema)


_ANY_OF = Draft202012Validator.VALIDATORS["anyOf"]


def _any_of(validator: Any, any_of: Any, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """Draft 2020-12's ``anyOf``, satisfied at once by a branch that is one type alone (``{"type":
    "null"}``: an optional field's, most of the anyOfs a results file meets) where the instance is of that
    type: that branch holds, so the anyOf does (no schema here reads annotations: no unevaluated*).
    Otherwise, the keyword itself, every branch tried and every error its own."""
    for branch in any_of:
        if (
            isinstance(branch, dict)
            and branch.keys() == {"type"}
            and validator.is_type(instance, branch["type"])
        ):
            return
    yield from _ANY_OF(validator, any_of, instance, schema)


Validator = validators.extend(Draft202012Validator, {"items": _items, "anyOf": _any_of})


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``{"$ref": "#/$defs/NAME"}`` replaced by that definition (inlined in turn), a
    $ref with other keywords beside it by ``allOf: [definition]`` beside them, as Draft 2020-12 reads
    it: the same checks, without a reference resolved at every object a document holds. None of the
    published schemas refers to anything but its own $defs, none of them recursively (asserted)."""
    definitions = schema.get("$defs", {})

    def inline(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            name = ref.removeprefix("#/$defs/")
            assert ref.startswith("#/$defs/") and name in definitions and name not in seen, ref
            target = inline(definitions[name], (*seen, name))
            rest = {key: inline(value, seen) for key, value in node.items() if key != "$ref"}
            assert "allOf" not in rest, ref
            return {**rest, "allOf": [target]} if rest else target
        return {key: inline(value, seen) for key, value in node.items() if key != "$defs"}

    assert "unevaluatedProperties" not in json.dumps(schema) and "$dynamicRef" not in json.dumps(schema)
    return inline(schema, ())


@functools.cache
def published(name: str) -> Draft202012Validator:
    """The validator of docs/schemas/'s file for ``name``, checked against the meta-schema; built once per
    session (checking a schema takes longer than validating most documents against it). Draft 2020-12's
    rules, ``items`` checked without a descent per item where its schema is one type (_items), ``anyOf``
    passed by a branch of one type that the instance has (_any_of), and its own $defs inlined (_inlined)."""
    schema = json.loads((ROOT / "docs" / "schemas" / file_name(name)).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Validator(_inlined(schema))


def assert_valid(name: str, document: Any) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in published(name).iter_errors(document)]
    assert not errors, f"{name}: {errors[:3]}"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_the_schemas_are_what_the_models_generate() -> None:
    """launchbench/report/schemas/ and docs/schemas/ hold what json_schemas generates (python scripts/docs.py)."""
    for name in SCHEMAS:
        text = schema_text(name)
        assert (ROOT / "docs" / "schemas" / file_name(name)).read_text(encoding="utf-8") == text, name
        assert shipped_schema(name) == json.loads(text), name
    assert docs.compare_markdown() == (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")


def test_the_csv_columns_are_the_documents_fields() -> None:
    assert tuple(ComparisonLine.model_fields) == DATA_KEYS
    listed = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8").split("#### CSV columns", 1)[1]
    table = listed.split("<!--", 1)[0]  # up to the end of the generated block
    order = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert order == list(DATA_KEYS)


def test_compare_json_is_valid_with_and_without_a_gate() -> None:
    base, cur = str(H200 / "quickstart-a"), str(H200 / "quickstart-longer")
    plain = invoke("compare", base, cur, "--format", "json")
    gated = invoke("compare", base, cur, "--format", "json", "--fail-on", "wall_us_per_launch:5%")
    for result in (plain, gated):
        document = json.loads(result.stdout)
        assert document["schema_version"] == 1 and document["rows"]
        assert_valid("comparison", document)
    assert json.loads(gated.stdout)["gate"]["checks"] and json.loads(plain.stdout)["gate"] is None


def test_the_paired_comparison_of_an_ab_run_is_valid() -> None:
    """compare OUT/a OUT/b is the document ab prints (paired, round by round)."""
    source = ROOT / "results" / "ab-h200" / "lockstep" / "aa-1"
    document = json.loads(invoke("compare", str(source / "a"), str(source / "b"), "--format", "json").stdout)
    assert document["settings"]["paired"] is True
    assert_valid("comparison", document)


def test_check_json_is_valid() -> None:
    result = invoke(
        "check", str(H200 / "quickstart-a"), "-s", "scenarios/quickstart.yaml", "--format", "json"
    )
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1 and document["checks"]
    assert_valid("check", document)


def test_env_json_is_valid() -> None:
    result = invoke("env", "--format", "json")
    document = json.loads(result.stdout)
    assert document["schema_version"] == 1 and document["python"]
    assert_valid("env", document)
    assert json.loads(invoke("env", "--json").stdout).keys() == document.keys()  # the old spelling


def test_a_document_of_another_layout_is_refused() -> None:
    document = json.loads(invoke("env", "--format", "json").stdout)
    assert not published("env").is_valid({**document, "python": 3})
    check = json.loads(
        invoke(
            "check", str(H200 / "quickstart-a"), "-s", "scenarios/quickstart.yaml", "--format", "json"
        ).stdout
    )
    assert not published("check").is_valid({**check, "surprise": 1})


def test_results_files_of_this_version_are_valid(tmp_path: Path) -> None:
    """A results.json written now, and every committed one (results/ and the golden files) of the current
    SCHEMA_VERSION (older ones are migrated when read; the schema describes the current layout)."""
    write_run(tmp_path / "run", make_run(n=10))
    committed = [*committed_results(), *DATA.glob("golden/results-v*.json")]
    files = [tmp_path / "run" / "results.json", *sorted(committed)]
    current = [json.loads(results_bytes(f)) for f in files]
    current = [d for d in current if d["schema_version"] == SCHEMA_VERSION]
    assert len(current) >= 2
    for document in current:
        assert_valid("results", document)
    assert not published("results").is_valid({**current[0], "cases": [{"scenario": "x"}]})


def good_scenarios() -> list[Path]:
    files = sorted(ROOT.glob("scenarios/**/*.yaml")) + sorted(DATA.glob("**/*.yaml"))
    return [p for p in files if "bad" not in p.relative_to(DATA if DATA in p.parents else ROOT).parts]


@pytest.mark.parametrize("path", good_scenarios(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_scenario_schema_accepts_every_committed_scenario(path: Path) -> None:
    data, _ = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    assert_valid("scenario", data)


@pytest.mark.parametrize("name", [n for names in STRUCTURAL.values() for n in names])
def test_the_scenario_schema_refuses_structural_faults(name: str) -> None:
    path = DATA / "bad" / f"{name}.yaml"
    data, _ = parse_yaml(path.read_text(encoding="utf-8"), str(path))
    assert not published("scenario").is_valid(data), name


def test_a_scenario_can_name_its_schema(tmp_path: Path) -> None:
    """The YAML language server's comment on the first line is a comment to the loader."""
    text = (ROOT / "scenarios" / "quickstart.yaml").read_text(encoding="utf-8")
    path = tmp_path / "quickstart.yaml"
    path.write_text(
        "# yaml-language-server: $schema=../docs/schemas/scenario.schema.json\n" + text, encoding="utf-8"
    )
    plain = load_scenario_file(ROOT / "scenarios" / "quickstart.yaml")
    assert load_scenario_file(path).scenario == plain.scenario


@pytest.mark.parametrize(
    ("where", "value", "valid"),
    [
        ("measure.added_passes", 1, True),
        ("measure.added_passes", None, True),
        ("measure.added_passes", -1, False),
        ("measure.added_passes", 101, False),
        ("shapes.cache_limit", 2, True),
        ("shapes.cache_limit", 0, False),
    ],
)
def test_the_scenario_schema_bounds_optional_counts(where: str, value: object, valid: bool) -> None:
    """An optional count's bounds are JSON Schema's minimum and maximum, which an editor checks (pydantic
    wrote them as keys no validator reads where the bounds came after the number check)."""
    data, _ = parse_yaml((ROOT / "scenarios" / "quickstart.yaml").read_text(encoding="utf-8"), "quickstart")
    section, key = where.split(".")
    data = {**data, section: {**data.get(section, {}), key: value}}
    if section == "shapes":
        data["shapes"].update({"param": "length", "values": [1, 10], "per_shape": 4})
        data.pop("sweep")
    assert published("scenario").is_valid(data) is valid
