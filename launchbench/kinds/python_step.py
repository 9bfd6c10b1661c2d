"""``python``: the user's own Python function (see python_call.py for how it is imported and called);
its node count is the user's."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from launchbench.kinds import base
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec, StepBase
from launchbench.kinds.fields import MAX_LAUNCHES_PER_CALL, Int
from launchbench.kinds.python_call import call_user_function, load_callable

_CALLABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class PythonStep(StepBase):
    """The user's own Python function: imported at build time (the scenario file's folder is searched too)
    and called as ``function(xp=cupy, stream=stream, **args)``; it allocates its buffers and returns what
    launches one iteration (see docs/scenarios.md for the contract)."""

    # keyword arguments launchbench passes to the function itself
    PASSED: ClassVar[tuple[str, ...]] = ("xp", "stream")

    kind: Literal["python"]
    callable: str = Field(..., description="'module:function', e.g. workloads.mlp:training_step")
    args: dict[str, Any] = Field(default_factory=dict, description="keyword arguments for the function")
    launches_per_call: Int = Field(
        1,
        alias="launches",
        ge=1,
        le=MAX_LAUNCHES_PER_CALL,
        description="launches one call of the returned run issues",
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
            if name in cls.PASSED:
                raise ValueError(f"argument '{name}' is passed by launchbench itself; choose another name")
        return args

    def launches(self) -> int:
        """Launches per chain iteration: the declared launches of one call, times repeat."""
        return self.repeat * self.launches_per_call


def build(step: PythonStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    function = load_callable(step.callable, context.source)
    with stream:
        work = call_user_function(
            function, step.callable, context.source, {"xp": cupy, "stream": stream}, step.args
        )
        built = BuiltStep([work.run] * step.repeat)
        for name, array in work.outputs.items():
            if work.reset is None:
                base.with_initial(array, built, f"{prefix}.{name}")
            else:
                built.outputs[f"{prefix}.{name}"] = array
        if work.reset is not None:
            built.reset_calls.append(work.reset)
    stream.synchronize()  # the function may have written its initial data on this stream
    return built


# a python step allocates what its function allocates
KIND = KindSpec(
    model=PythonStep,
    build=build,
    nbytes=lambda step: 0,
    nodes_per_launch=None,
    takes_stream=False,
    summary='your CuPy code, `callable: "module:function"`: `function(xp=cupy, stream=..., **args)` allocates its buffers and returns a '
    "zero-argument `run` (or `{run, outputs, reset}`); the module is found beside the scenario file",
    examples=({"kind": "python", "callable": "mod:fn", "launches": 4},),
)
