"""The JSON Schemas of what launchbench writes and reads, generated from its pydantic models: results.json
(RunRecord), the JSON documents of compare, check, env and history (launchbench.report.documents) and
scenario files (launchbench.scenario.model.Scenario, with each chain's steps typed by their kinds).

The package ships them in launchbench/report/schemas/ and docs/schemas/ publishes them; both are written
by ``python scripts/docs.py`` and a test keeps them current. A scenario file names its schema for editors
with a YAML language server comment on its first line:
``# yaml-language-server: $schema=../docs/schemas/scenario.schema.json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

from pydantic import BaseModel, TypeAdapter

from launchbench.report import documents
from launchbench.results.schema import RunRecord
from launchbench.scenario.model import STEP_FIELDS, Scenario, Shapes, Step

DIALECT = "https://json-schema.org/draft/2020-12/schema"
REFERENCE = {"type": "string", "pattern": r"^\$", "description": "a $name reference or ${expression}"}
Schema = dict[str, Any]


def model_schema(model: type[BaseModel], title: str, mode: str = "serialization") -> Schema:
    """``model``'s JSON Schema with the dialect and a title."""
    schema = model.model_json_schema(mode=mode)  # type: ignore[arg-type]
    return {"$schema": DIALECT, "title": title, **{k: v for k, v in schema.items() if k != "title"}}


def _with_references(schema: Any) -> Any:
    """Every property and array item of ``schema`` (a step's or a shapes block's) also takes a
    ``$name`` reference or ``${expression}`` string, as the loader does before it checks types; ``kind``
    stays a literal."""
    if isinstance(schema, list):
        return [_with_references(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _with_references(v) for k, v in schema.items()}
    if isinstance(out.get("properties"), dict):
        out["properties"] = {
            name: sub if name == "kind" else {"anyOf": [sub, REFERENCE]}
            for name, sub in out["properties"].items()
        }
    if isinstance(out.get("items"), dict):
        out["items"] = {"anyOf": [out["items"], REFERENCE]}
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = {"anyOf": [out["additionalProperties"], REFERENCE]}
    return out


def _step_models(step: Schema) -> list[str]:
    """The names of the step kinds' models in the Step union's schema."""
    return [option["$ref"].rsplit("/", 1)[-1] for option in step["oneOf"]]


def scenario_schema() -> Schema:
    """A scenario file: Scenario's schema, each chain a list of the step kinds' models (told apart by
    ``kind``), ``shapes`` the Shapes model, ``defaults`` keys the steps' fields, and ``chain`` (one
    unnamed chain) as the alternative to ``chains``."""
    schema = model_schema(Scenario, "launchbench scenario file", mode="validation")
    step = TypeAdapter(Step).json_schema(ref_template="#/$defs/{model}")
    shapes = Shapes.model_json_schema(ref_template="#/$defs/{model}")
    kinds = step.pop("$defs")
    for name in _step_models(step):  # a key of a step may come from the scenario's defaults
        kinds[name] = {**kinds[name], "required": ["kind"]}
    defs = {**schema.pop("$defs", {}), **_with_references({**kinds, **shapes.pop("$defs", {})})}
    defs["Step"] = {"oneOf": step["oneOf"], "description": "one step of a chain; its kind picks its keys"}
    defs["Shapes"] = _with_references(shapes)
    steps = {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Step"}}
    properties = schema["properties"]
    properties["chains"] = {**properties["chains"], "additionalProperties": steps}
    properties["chain"] = {**steps, "description": "one chain, named 'chain' (instead of chains)"}
    properties["shapes"] = {"anyOf": [{"$ref": "#/$defs/Shapes"}, {"type": "null"}], "default": None}
    fields = sorted({key for keys in STEP_FIELDS.values() for key in keys} - {"kind"})
    properties["defaults"] = {**properties["defaults"], "propertyNames": {"enum": fields}}
    schema["required"] = [k for k in schema["required"] if k != "chains"]
    schema["oneOf"] = [{"required": ["chains"]}, {"required": ["chain"]}]
    return {**schema, "$defs": defs}


SCHEMAS: dict[str, Callable[[], Schema]] = {
    "results": lambda: model_schema(RunRecord, "launchbench results.json"),
    "comparison": lambda: model_schema(documents.ComparisonDocument, "launchbench compare/ab --format json"),
    "comparison-series": lambda: model_schema(
        documents.ComparisonSeriesDocument, "launchbench compare BASELINE CURRENT CURRENT... --format json"
    ),
    "ab-devices": lambda: model_schema(
        documents.AbDevicesDocument, "launchbench ab --devices ... --format json"
    ),
    "check": lambda: model_schema(documents.CheckDocument, "launchbench check --format json"),
    "env": lambda: model_schema(documents.EnvironmentDocument, "launchbench env --format json"),
    "history-list": lambda: model_schema(
        documents.HistoryRunsDocument, "launchbench history list --format json"
    ),
    "history-trend": lambda: model_schema(
        documents.HistoryTrendDocument, "launchbench history trend --format json"
    ),
    "history-changes": lambda: model_schema(
        documents.HistoryChangesDocument, "launchbench history changes --format json"
    ),
    "scenario": scenario_schema,
}


def file_name(name: str) -> str:
    return f"{name}.schema.json"


def schema_text(name: str) -> str:
    """The schema ``name`` (a key of SCHEMAS) as the text of its file."""
    return json.dumps(SCHEMAS[name](), indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def shipped_schema(name: str) -> Schema:
    """The schema ``name`` as the installed package holds it (launchbench/report/schemas/)."""
    text = (
        resources.files("launchbench.report").joinpath("schemas").joinpath(file_name(name)).read_text("utf-8")
    )
    schema: Schema = json.loads(text)
    return schema
