"""Pydantic building blocks shared by the scenario schema and the step kinds: strict frozen models,
numbers that must be written as numbers, and the limits CUDA and the tool set."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict
from pydantic_core import PydanticCustomError

MAX_ELEMENTS = 1 << 34  # 16 Gi elements: more than any GPU holds in one buffer
MAX_REPEAT = 100_000
MAX_BYTES = 1 << 37  # 128 GiB
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)
MAX_BLOCK_THREADS = 1024
MAX_STREAM = 7  # stream 0 is the case's main stream; 1..MAX_STREAM are auxiliary streams the backend creates
MAX_LAUNCHES_PER_CALL = 100_000


YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_UNDERSCORED = re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?$")
_BASE_PREFIX = re.compile(r"^[-+]?0[bBoOxX]?[0-9a-fA-F_]+$")


def _number(value: Any) -> Any:
    """Numbers must be written as numbers: no booleans (lax mode reads true as 1) and no strings."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            "number_type", "expected a number, not the boolean {value}", {"value": str(value).lower()}
        )
    if isinstance(value, str):
        hint = ""
        if value.startswith("$"):
            hint = " ($name references work only in chain steps and defaults)"
        elif value.lower() in YAML11_BOOLEANS:
            hint = " (YAML 1.2 reads yes/no/on/off as text; a boolean is true or false)"
        elif _SEXAGESIMAL.match(value):
            hint = " (YAML 1.2 reads 1:30 as text, not as the base-60 number 90; write the number)"
        elif "_" in value and _UNDERSCORED.match(value):
            hint = " (YAML 1.2 reads digits with '_' as text; write the number without '_')"
        elif _BASE_PREFIX.match(value) and not value.lstrip("+-").isdigit():
            hint = " (YAML 1.2 numbers are decimal, 0o octal or 0x hexadecimal)"
        else:
            try:
                float(value)
                hint = " (write it without quotes)"
            except ValueError:
                pass
        raise PydanticCustomError(
            "number_type",
            "expected a number, not the string {value}{hint}",
            {"value": repr(value), "hint": hint},
        )
    return value


def _boolean(value: Any) -> Any:
    """Booleans must be written as true or false (lax mode would read 'yes', 'on', 1 as true)."""
    if not isinstance(value, bool):
        hint = (
            " (YAML 1.2 reads yes/no/on/off as text)"
            if isinstance(value, str) and value.lower() in YAML11_BOOLEANS
            else ""
        )
        raise PydanticCustomError(
            "bool_type", "expected true or false, not {value}{hint}", {"value": repr(value), "hint": hint}
        )
    return value


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError(
            "value_type",
            "expected a number or a string, not the boolean {value}",
            {"value": str(value).lower()},
        )
    return value


Bool = Annotated[bool, BeforeValidator(_boolean)]
NUMBER_ONLY = BeforeValidator(_number)  # a number, never a boolean or text, checked before the type
Int = Annotated[int, NUMBER_ONLY]
Float = Annotated[float, NUMBER_ONLY]
Number = Annotated[float | int, NUMBER_ONLY]
ParamValue = Annotated[float | int | str, BeforeValidator(_not_bool)]


class Strict(BaseModel):
    """A frozen model that refuses unknown keys and non-finite floats."""

    # defer_build: a model's validator is built when it is first used, so a worker process that
    # measures one kind of step builds that kind's alone
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


FloatDType = Literal["float16", "float32", "float64"]
ScalarDType = Literal[
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"
]
