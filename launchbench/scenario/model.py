"""Pydantic models of a scenario file and of the steps a chain can hold.

A scenario names a set of chains (each a list of steps) and the parameters they use. Step fields may
hold ``$name`` references to parameters; a ``sweep`` gives some parameters several values, and every
combination of values is one case (see expand.py).
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Literal, get_args

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from launchbench.backend.kinds.fields import (
    MAX_BLOCK,
    MAX_BLOCK_THREADS,
    MAX_BYTES,
    MAX_ELEMENTS,
    MAX_GRID,
    MAX_LAUNCHES_PER_CALL,
    MAX_REPEAT,
    MAX_STREAM,
    Bool,
    Float,
    Int,
    Number,
    ParamValue,
    Strict,
)
from launchbench.scenario.core import MeasureSettings

FloatDType = Literal["float16", "float32", "float64"]
ScalarDType = Literal["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint32", "uint64"]

MAX_SWEEP_MAGNITUDE = 1e18  # range ends beyond this are typos, and their arithmetic overflows


class _StepBase(Strict):
    repeat: Int = Field(1, ge=1, le=MAX_REPEAT, description="how many times the step is launched in a row")
    label: str | None = Field(None, description="a name for the step in reports")
    stream: Int = Field(
        0, description=f"0: the case's main stream; 1..{MAX_STREAM}: an auxiliary stream, forked from and joined to the main one"
    )

    @field_validator("stream")
    @classmethod
    def _check_stream(cls, stream: int) -> int:
        if not 0 <= stream <= MAX_STREAM:
            raise ValueError(
                f"stream {stream} does not exist: 0 is the case's main stream, 1 to {MAX_STREAM} are auxiliary streams"
            )
        return stream

    def launches(self) -> int:
        """Launches this step issues per chain iteration (one per repeat)."""
        return self.repeat


class EmptyStep(_StepBase):
    """A kernel that does nothing: the pure cost of a launch."""

    kind: Literal["empty"]
    grid: Int = Field(1, ge=1, le=MAX_GRID[0])
    block: Int = Field(1, ge=1, le=MAX_BLOCK_THREADS)


class ElementwiseStep(_StepBase):
    """scale: x = alpha*x;  add: y = x + y;  fma: y = alpha*x + y  (in place, through CuPy)."""

    kind: Literal["scale", "add", "fma"]
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS, description="elements per buffer")
    dtype: FloatDType = "float32"
    alpha: Float = 0.999


class ReductionStep(_StepBase):
    """out = sum(x) through CuPy (CUB where CuPy uses it)."""

    kind: Literal["reduction"]
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS)
    dtype: FloatDType = "float32"
    op: Literal["sum"] = "sum"


class CopyStep(_StepBase):
    """Device-to-device copy of ``bytes`` bytes (cudaMemcpyAsync)."""

    kind: Literal["copy"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)


class MemsetStep(_StepBase):
    """cudaMemsetAsync of ``bytes`` bytes to ``value``."""

    kind: Literal["memset"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)
    value: Int = Field(0, ge=0, le=255)


class HostCopyStep(_StepBase):
    """h2d: pinned host → device;  d2h: device → pinned host;  ``bytes`` bytes through cudaMemcpyAsync."""

    kind: Literal["h2d", "d2h"]
    bytes: Int = Field(..., ge=1, le=MAX_BYTES)


_CALLABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class PythonStep(_StepBase):
    """The user's own Python function: imported at build time (the scenario file's folder is searched too)
    and called as ``function(xp=cupy, stream=stream, **args)``; it allocates its buffers and returns what
    launches one iteration (see docs/scenarios.md for the contract)."""

    kind: Literal["python"]
    callable: str = Field(..., description="'module:function', e.g. workloads.mlp:training_step")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments for the function")
    launches_per_call: Int = Field(
        1, alias="launches", ge=1, le=MAX_LAUNCHES_PER_CALL, description="launches one call of the returned run issues"
    )

    @field_validator("callable")
    @classmethod
    def _check_callable(cls, spec: str) -> str:
        if not _CALLABLE.match(spec):
            raise ValueError(
                f"callable must be 'module:function' (a dotted module path, a colon, a function name), "
                f"e.g. 'workloads.mlp:training_step'; got {spec!r}"
            )
        return spec

    @field_validator("args")
    @classmethod
    def _check_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        for name in args:
            if not isinstance(name, str) or not _IDENTIFIER.match(name):
                raise ValueError(f"argument name {name!r} is not a Python identifier")
            if name in ("xp", "stream"):
                raise ValueError(f"argument '{name}' is passed by launchbench itself; choose another name")
        return args

    def launches(self) -> int:
        """Launches per chain iteration: the declared launches of one call, times repeat."""
        return self.repeat * self.launches_per_call


class RawBuffer(Strict):
    size: Int = Field(..., ge=1, le=MAX_ELEMENTS)
    dtype: ScalarDType = "float32"
    init: Literal["random", "zeros", "ones", "arange"] = "random"


class BufferArg(Strict):
    buffer: str


class ScalarArg(Strict):
    scalar: Number
    dtype: ScalarDType = "float32"


def _dim3(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return value
    return (value,)


class RawStep(_StepBase):
    """The user's own CUDA C kernel, compiled with NVRTC through cupy.RawKernel."""

    kind: Literal["raw"]
    source: str = Field(..., min_length=1)
    function: str = Field(..., min_length=1, description="the extern \"C\" kernel name")
    grid: tuple[Int, ...]
    block: tuple[Int, ...]
    shared_mem: Int = Field(0, ge=0, le=228 * 1024)
    options: tuple[str, ...] = ()
    buffers: dict[str, RawBuffer] = Field(default_factory=dict)
    args: tuple[BufferArg | ScalarArg, ...] = ()

    _dims = field_validator("grid", "block", mode="before")(_dim3)

    @field_validator("grid", "block")
    @classmethod
    def _check_dims(cls, dims: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        if not 1 <= len(dims) <= 3 or any(d < 1 for d in dims):
            raise ValueError("must be 1 to 3 positive integers")
        limits = MAX_GRID if info.field_name == "grid" else MAX_BLOCK
        for axis, (d, limit) in enumerate(zip(dims, limits)):
            if d > limit:
                raise ValueError(f"dimension {'xyz'[axis]} is {d}; CUDA allows at most {limit}")
        if info.field_name == "block":
            threads = math.prod(dims)
            if threads > MAX_BLOCK_THREADS:
                raise ValueError(f"block has {threads} threads; CUDA allows at most {MAX_BLOCK_THREADS}")
        return dims

    @field_validator("args")
    @classmethod
    def _check_args(cls, args: tuple[BufferArg | ScalarArg, ...], info: ValidationInfo) -> tuple[BufferArg | ScalarArg, ...]:
        buffers = info.data.get("buffers")
        if buffers is None:  # the buffers themselves are invalid; that error is reported
            return args
        for index, arg in enumerate(args):
            if isinstance(arg, BufferArg) and arg.buffer not in buffers:
                known = ", ".join(sorted(buffers)) or "none"
                raise ValueError(f"argument {index} names buffer '{arg.buffer}', which is not declared (buffers: {known})")
        return args


Step = Annotated[
    EmptyStep | ElementwiseStep | ReductionStep | CopyStep | MemsetStep | RawStep | HostCopyStep | PythonStep,
    Field(discriminator="kind"),
]



class SweepRange(Strict):
    """A numeric axis given as a range: ``num`` values from ``start`` to ``stop``, linear or log spaced."""

    start: Float = Field(..., ge=-MAX_SWEEP_MAGNITUDE, le=MAX_SWEEP_MAGNITUDE)
    stop: Float = Field(..., ge=-MAX_SWEEP_MAGNITUDE, le=MAX_SWEEP_MAGNITUDE)
    num: Int = Field(..., ge=1, le=10_000)
    scale: Literal["linear", "log"] = "log"
    integer: Bool = True

    @model_validator(mode="after")
    def _positive_for_log(self) -> SweepRange:
        if self.scale == "log" and (self.start <= 0 or self.stop <= 0):
            raise ValueError("a log-scaled range needs start and stop above 0")
        return self


class Expectation(Strict):
    """A rule checked on a single run: e.g. graph wall time per launch below 1 µs for a case."""

    case: str = Field("*", description="case id or fnmatch pattern")
    mode: Literal["eager", "graph"] = "graph"
    metric: str
    min: Float | None = None
    max: Float | None = None

    @field_validator("max")
    @classmethod
    def _max_above_min(cls, high: float | None, info: ValidationInfo) -> float | None:
        low = info.data.get("min")
        if high is not None and low is not None and high < low:
            raise ValueError(f"max ({high:g}) is below min ({low:g}): no value can pass")
        return high

    @model_validator(mode="after")
    def _bound(self) -> Expectation:
        if self.max is None and self.min is None:
            raise ValueError("an expectation needs max or min")
        return self


def _chain_name(name: str) -> str:
    if "/" in name or not name.strip() or not name.isprintable():
        raise ValueError(f"chain name {name!r} must be non-empty, printable and hold no '/'")
    return name


ChainName = Annotated[str, AfterValidator(_chain_name)]
ChainSteps = Annotated[list[dict[str, Any]], Field(min_length=1)]
Identifier = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]  # what `$name` can reference
SweepValues = Annotated[list[Number], Field(min_length=1)]


class Scenario(Strict):
    name: str = Field(..., min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = Field(..., min_length=1)
    params: dict[Identifier, ParamValue] = Field(default_factory=dict)
    defaults: dict[str, Any] = Field(default_factory=dict, description="step fields applied to every step that takes them")
    sweep: dict[Identifier, SweepValues | SweepRange] = Field(default_factory=dict)
    chains: dict[ChainName, ChainSteps] = Field(..., min_length=1)
    measure: MeasureSettings = Field(default_factory=MeasureSettings)
    expect: list[Expectation] = Field(default_factory=list)
    max_cases: Int = Field(1000, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _single_chain(cls, data: Any) -> Any:
        if isinstance(data, dict) and "chain" in data:
            if "chains" in data:
                raise ValueError("give either 'chain' or 'chains', not both")
            data = dict(data)
            data["chains"] = {"chain": data.pop("chain")}
        return data


def _step_fields() -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    for model in get_args(get_args(Step)[0]):  # the models of the Step union, in its order
        kinds = model.model_fields["kind"].annotation.__args__  # type: ignore[union-attr]
        for kind in kinds:
            fields[kind] = [info.alias or name for name, info in model.model_fields.items()]
    return fields


STEP_FIELDS: dict[str, list[str]] = _step_fields()
STEP_KINDS: tuple[str, ...] = tuple(STEP_FIELDS)
