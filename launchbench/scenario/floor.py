"""The ``floor:`` block of a scenario: which launch-path layers ``launchbench floor`` measures, with
how many kernel arguments, how many launches per iteration and how long."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from launchbench.kinds.fields import Float, Int, Strict

Layer = Literal[
    "c", "bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu"
]  # fmt: skip
LAYERS: tuple[Layer, ...] = (
    "c", "bindings", "cupy_raw", "cupy_raw_stream", "cupy_elementwise", "cupy_ufunc", "torch", "gpu"
)  # fmt: skip
# the layers whose kernel takes the argument-count axis (the others launch their own fixed kernels)
ARG_LAYERS: frozenset[Layer] = frozenset({"c", "bindings", "cupy_raw", "cupy_raw_stream"})
MAX_ARGS = 64
ProcessLayout = Literal["layer", "shared"]  # a fresh process per layer, or every layer but torch in one
PROCESS_LAYOUTS: tuple[ProcessLayout, ...] = ("layer", "shared")


class Floor(Strict):
    """What ``launchbench floor`` measures: each layer of ``layers`` eagerly and as a graph, a case per
    argument count for the layers that launch the empty kernel directly (``c``, ``bindings``,
    ``cupy_raw``, ``cupy_raw_stream``). ``processes``: ``layer`` (the default) measures each layer's
    cases in a fresh process of its own, as a standalone loop of that layer runs; ``shared`` measures every
    layer but torch in one process, interleaved in rounds (so the steps between layers are paired round by
    round), and torch in a fresh process of its own."""

    layers: Annotated[list[Layer], Field(min_length=1)] = Field(default_factory=lambda: list(LAYERS))
    args: Annotated[list[Int], Field(min_length=1)] = Field(
        default_factory=lambda: [0, 4, 16], description="kernel argument counts (pointers), each 0 to 64"
    )
    nodes: Int = Field(
        1, ge=1, le=256, description="launches per iteration: eager launches, or kernel nodes of the graph"
    )
    gpu_nodes: Int = Field(
        100,
        ge=1,
        le=10_000,
        description="kernel nodes of the graph whose replay gives the GPU's per-node floor",
    )
    processes: ProcessLayout = Field(
        "layer",
        description="layer: a fresh process per layer; shared: every layer but torch in one process",
    )
    max_time: Float = Field(30.0, gt=0, le=3600, description="time budget of all layers together (seconds)")

    @field_validator("args")
    @classmethod
    def _args(cls, args: list[int]) -> list[int]:
        wrong = [a for a in args if not 0 <= a <= MAX_ARGS]
        if wrong:
            raise ValueError(f"{wrong[0]} kernel arguments: give 0 to {MAX_ARGS}")
        if len(set(args)) != len(args):
            raise ValueError("an argument count is listed twice")
        return sorted(args)

    @field_validator("layers")
    @classmethod
    def _layers(cls, layers: list[Layer]) -> list[Layer]:
        if len(set(layers)) != len(layers):
            raise ValueError("a layer is listed twice")
        return [layer for layer in LAYERS if layer in layers]  # the stacking order, low to high
