"""What every step kind provides (KindSpec) and what its builder returns (BuiltStep).

A kind's module holds its pydantic model, how much device memory a step allocates, and its builder: it
allocates the step's buffers (once, before any capture) and returns the launch calls, the buffers they
write and how to restore their initial contents. Every call writes through ``out=`` (or in place) into
buffers allocated by the builder, so the addresses frozen into a captured graph stay valid for the
graph's life. Builders import CuPy inside their bodies: the definitions import without a GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from pydantic import Field, field_validator

from launchbench.kinds.fields import MAX_REPEAT, MAX_STREAM, Int, Strict

INPUT_SEED = 1234  # initial buffer contents are the same random values in every run
POISON_BYTE = 0xAB


class StepBase(Strict):
    repeat: Int = Field(1, ge=1, le=MAX_REPEAT, description="how many times the step is launched in a row")
    label: str | None = Field(None, description="a name for the step in reports")
    stream: Int = Field(
        0,
        description=f"0: the case's main stream; 1..{MAX_STREAM}: an auxiliary stream, forked from and joined to the main one",
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


@dataclass
class BuiltStep:
    calls: list[Callable[[], Any]]
    outputs: dict[str, Any] = field(
        default_factory=dict
    )  # cupy arrays, or numpy arrays in pinned host memory
    resets: list[tuple[Any, Any]] = field(
        default_factory=list
    )  # (output, its initial contents): chain.reset_steps
    reset_calls: list[Callable[[], Any]] = field(default_factory=list)  # a python step's own reset
    keep: list[Any] = field(default_factory=list)  # buffers the calls use by raw address only
    # where the kind knows them: the outputs' contents after one chain iteration, computed on the host
    # (by name, as in ``outputs``); the output check holds eager's outputs to them
    reference: Callable[[], dict[str, np.ndarray]] | None = None
    # why CuPy's stream capture must not take this step (the graph mode is then not_capturable with it)
    graph_refusal: str | None = None


class BuildContext(Protocol):
    """What a builder gets from the backend besides its step and stream."""

    rng: np.random.Generator  # seeded with INPUT_SEED: the same inputs in every run
    source: str  # the scenario file (python steps import beside it)
    rank: int  # this process's rank in a case on several GPUs (0 on one GPU)
    world: int  # the ranks of the case (1 on one GPU)
    communicator: Any  # the ranks' NCCL communicator (None on one GPU)

    def kernel(self, source: str, name: str) -> Any:
        """A compiled cupy.RawKernel of ``source``, compiled once per case."""
        ...


Builder = Callable[[Any, BuildContext, str, Any], BuiltStep]  # (step, context, output-name prefix, stream)


@dataclass(frozen=True)
class KindProblem:
    """A step that breaks one of its kind's own rules: the sentence, and the key under the step it is
    about (empty: the step itself)."""

    message: str
    key: tuple[str, ...] = ()


@dataclass(frozen=True)
class KindSpec:
    """One step kind: its model (whose ``kind`` Literal names the kinds it covers), its builder, the
    device memory a step allocates, the graph nodes one launch adds (None where CuPy or the user
    decides), and whether its launches take the stream (else they launch on the current stream, and a
    step on an auxiliary stream is wrapped in ``with stream:``, one wrapper per launch); ``summary``:
    what it launches, one markdown sentence for the kind table of docs/scenarios.md; ``examples``: one
    valid step (as a scenario writes it) per kind name; ``graph_nodes`` where a step's node count is
    not one number per launch; ``check_ranks``: the kind's rules against the ranks a scenario runs on."""

    model: type[StepBase]
    build: Builder
    nbytes: Callable[[Any], int]
    nodes_per_launch: int | None
    takes_stream: bool
    summary: str
    examples: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)
    # the top-level graph nodes a step adds per chain iteration, where that is not nodes_per_launch ×
    # launches (a WHILE node holds its loop in a body graph; an allocation adds a node but no launch)
    graph_nodes: Callable[[Any], int] | None = None
    collective: bool = False  # an NCCL collective: the scenario must run on 2 or more devices
    # the Python modules its builder imports besides CuPy (a run refuses the scenario up front without them)
    requires: tuple[str, ...] = ()
    check_ranks: Callable[[Any, int], KindProblem | None] | None = None

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.model.model_fields["kind"].annotation.__args__)  # type: ignore[union-attr]

    def ranks_problem(self, step: Any, ranks: int) -> KindProblem | None:
        """What is wrong with ``step`` on a scenario of ``ranks`` devices, by its kind's own rules."""
        return None if self.check_ranks is None else self.check_ranks(step, ranks)


def with_initial(array: Any, built: BuiltStep, name: str) -> None:
    """Record ``array`` as an output of the step, and a copy of its contents to reset it to."""
    built.outputs[name] = array
    built.resets.append((array, array.copy()))


def repeated(
    call: Callable[[], Any], repeat: int, output: Any, name: str, keep: Sequence[Any] = ()
) -> BuiltStep:
    """A step of ``call`` launched ``repeat`` times that writes ``output`` (recorded with with_initial);
    ``keep``: buffers the call uses by raw address only."""
    built = BuiltStep([call] * repeat, keep=list(keep))
    with_initial(output, built, name)
    return built
