"""Build each step of a case on the GPU through its kind's builder (kinds/): on the case's main
stream, or on auxiliary stream N for a step with ``stream: N`` (N > 0). Kinds whose launches take the
stream get it passed; the others (CuPy ufuncs, reductions, the user's python ``run``) are wrapped in
``with stream:``, one wrapper per launch. Forking those streams from the main one and joining them back
is the backend's."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import cupy
import numpy as np

from launchbench.errors import LaunchbenchError
from launchbench.kinds.base import INPUT_SEED, BuiltStep
from launchbench.kinds.registry import spec_of


def _on_stream(stream: cupy.cuda.Stream, call: Callable[[], Any]) -> Callable[[], Any]:
    """``call`` made current-stream-agnostic: it launches on ``stream`` whatever stream is current."""

    def on_stream() -> Any:
        with stream:
            return call()

    return on_stream


class StepBuilder:
    """Turns validated step models into BuiltSteps (the BuildContext of the kinds' builders). ``source``
    is the scenario file (python steps import beside it); ``rank``, ``world`` and ``communicator`` place
    it in a case on several GPUs."""

    def __init__(
        self,
        stream: cupy.cuda.Stream,
        streams: Mapping[int, cupy.cuda.Stream] | None = None,
        source: str = "",
        rank: int = 0,
        world: int = 1,
        communicator: Any = None,
    ):
        self.stream = stream
        self.streams = {0: stream, **dict(streams or {})}
        self.source = source
        self.rank = rank
        self.world = world
        self.communicator = communicator
        self.rng = np.random.default_rng(INPUT_SEED)
        self._kernels: dict[tuple[str, str], cupy.RawKernel] = {}

    def kernel(self, source: str, name: str) -> cupy.RawKernel:
        if (source, name) not in self._kernels:
            kernel = cupy.RawKernel(source, name)
            kernel.compile()
            self._kernels[source, name] = kernel
        return self._kernels[source, name]

    def _stream_of(self, step: Any) -> cupy.cuda.Stream:
        index = getattr(step, "stream", 0)
        if index not in self.streams:
            raise LaunchbenchError(f"step on stream {index}, which the backend did not create")
        return self.streams[index]

    def build(self, step: Any, index: int) -> BuiltStep:
        spec = spec_of(step)
        stream = self._stream_of(step)
        built = spec.build(step, self, f"step{index}.{step.kind}", stream)
        if stream is not self.stream and not spec.takes_stream:
            built.calls = [
                _on_stream(stream, call) for call in built.calls
            ]  # these launch on the current stream
        return built
