"""``torch``: the user's own PyTorch function, on the case's stream (a ``torch.cuda.ExternalStream`` over
CuPy's), so CuPy's stream capture takes its ops into the graph mode; a chain that holds a torch step is
also captured by ``torch.cuda.CUDAGraph`` (the ``torch_graph`` mode, backend/torch_graph.py).

The contract (docs/torch.md):

    def decode_step(torch, device, stream, **args):
        ...allocate every tensor here (before any capture)...
        return {"run": run, "outputs": {"y": y}, "reset": reset}   # or just `return run`

``run`` launches one iteration on torch's current stream (launchbench makes ``stream`` current), writing
only with ``out=`` or in place; ``outputs`` (name → CUDA tensor) are compared eager against each graph
mode. Torch is imported by the builder only: the model validates without it.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

from pydantic import Field

from launchbench.errors import LaunchbenchError
from launchbench.kinds import base
from launchbench.kinds.base import BuildContext, BuiltStep, KindSpec
from launchbench.kinds.python_call import ArrayRule, call_user_function, load_callable
from launchbench.kinds.python_step import PythonStep

KIND_NAME = "torch"
INSTALL_HINT = "pip install 'launchbench[torch]' (or a torch build for your CUDA from pytorch.org)"


class TorchStepError(LaunchbenchError):
    """A torch step that cannot run: torch missing, or its function unusable."""


class TorchStep(PythonStep):
    """The user's own PyTorch function: imported at build time (the scenario file's folder is searched
    too) and called once as ``function(torch=torch, device=device, stream=stream, **args)``, ``stream``
    being the case's CuPy stream as a torch stream; it allocates its tensors and returns what launches
    one iteration (see docs/torch.md for the contract)."""

    PASSED: ClassVar[tuple[str, ...]] = ("torch", "device", "stream")

    kind: Literal["torch"]  # type: ignore[assignment]
    callable: str = Field(..., description="'module:function', e.g. workloads.decode:decode_step")


def holds_torch(steps: Iterable[Any]) -> bool:
    """Whether a chain holds a torch step (its case is measured in the torch_graph mode too)."""
    return any(getattr(step, "kind", None) == KIND_NAME for step in steps)


def import_torch(where: str) -> Any:
    """torch, with CUDA; TorchStepError in one line where it is missing or has no CUDA."""
    if importlib.util.find_spec("torch") is None:
        raise TorchStepError(f"{where}: torch is not installed; {INSTALL_HINT}")
    import torch

    if not torch.cuda.is_available():
        raise TorchStepError(f"{where}: torch {torch.__version__} sees no CUDA device (a CPU-only build?)")
    return torch


def as_cupy(tensor: Any) -> Any:
    """A CuPy view of a CUDA tensor (the same memory), so the output check and reset read it as they
    read CuPy arrays; bfloat16, which CuPy lacks, is viewed as int16 (compared bit for bit)."""
    import cupy
    import torch

    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    return cupy.from_dlpack(tensor.detach())


def allocations_per_call(torch: Any, run: Callable[[], Any], stream: Any) -> int:
    """Allocation requests torch's caching allocator served during one call of ``run`` (after one call
    that may set up lazily: cuBLAS workspaces, kernels)."""
    run()
    stream.synchronize()
    before = torch.cuda.memory_stats().get("allocation.all.allocated", 0)
    run()
    stream.synchronize()
    return int(torch.cuda.memory_stats().get("allocation.all.allocated", 0) - before)


def allocation_refusal(count: int, where: str) -> str | None:
    """Why CuPy's capture must not take a run that allocates ``count`` tensors per call (None for 0)."""
    if count <= 0:
        return None
    return (
        f"{where}: run allocates {count} tensor(s) per call through torch's caching allocator, which is "
        f"graph-safe only in a capture torch began; CuPy's capture would freeze addresses torch hands out "
        f"again (write with out= or in place; the torch_graph mode captures it with a private pool)"
    )


def _on_stream(torch: Any, stream: Any, call: Callable[[], Any]) -> Callable[[], Any]:
    def on_stream() -> Any:
        with torch.cuda.stream(stream):
            return call()

    return on_stream


def build(step: TorchStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy

    where = f"{context.source or '<no scenario file>'}: torch step '{step.callable}'"
    torch = import_torch(where)
    function = load_callable(step.callable, context.source, kind=KIND_NAME)
    device = torch.device("cuda", cupy.cuda.Device().id)
    torch_stream = torch.cuda.ExternalStream(stream.ptr, device=device)
    main = stream.ptr == cupy.cuda.get_current_stream().ptr  # the backend builds on the main stream
    if main:  # torch's current stream for the case: eager, CuPy's capture and torch_graph's replays
        torch.cuda.set_stream(torch_stream)
    rule = ArrayRule(lambda value: isinstance(value, torch.Tensor) and value.is_cuda, "a CUDA tensor")
    with stream, torch.cuda.stream(torch_stream):
        passed = {"torch": torch, "device": device, "stream": torch_stream}
        work = call_user_function(function, step.callable, context.source, passed, step.args, rule, KIND_NAME)
        run = work.run if main else _on_stream(torch, torch_stream, work.run)
        built = BuiltStep([run] * step.repeat, keep=list(work.outputs.values()))
        for name, tensor in work.outputs.items():
            if work.reset is None:
                base.with_initial(as_cupy(tensor), built, f"{prefix}.{name}")
            else:
                built.outputs[f"{prefix}.{name}"] = as_cupy(tensor)
        if work.reset is not None:
            built.reset_calls.append(work.reset)
        stream.synchronize()  # the function may have written its initial data on this stream
        built.graph_refusal = allocation_refusal(allocations_per_call(torch, run, stream), where)
    return built


# a torch step allocates what its function allocates
KIND = KindSpec(
    model=TorchStep,
    build=build,
    nbytes=lambda step: 0,
    nodes_per_launch=None,
    takes_stream=False,
    summary='your PyTorch code, `callable: "module:function"`: `function(torch=torch, device=..., stream=..., '
    "**args)` allocates its tensors and returns `run` (or `{run, outputs, reset}`, outputs as CUDA tensors); "
    "measured eagerly, as CuPy's capture (`graph`) and as `torch.cuda.CUDAGraph` (`torch_graph`) "
    "([torch.md](torch.md)); needs `launchbench[torch]`",
    examples=(
        {
            "kind": "torch",
            "callable": "workloads.decode_torch:decode_step",
            "args": {"batch": 4},
            "launches": 39,
        },
    ),
    requires=("torch",),
)
