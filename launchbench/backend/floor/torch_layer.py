"""Layer ``torch``: ``Tensor.mul_`` on two small tensors, eagerly and as a ``torch.cuda.CUDAGraph``
replayed, on CuPy's stream (through ``torch.cuda.ExternalStream``) so the same events time it."""

from __future__ import annotations

from functools import partial
from typing import Any

from launchbench.backend.floor.base import FloorContext, LayerUnavailable, LayerWorkloads
from launchbench.backend.workload import LaunchLoop

ELEMENTS = 1024


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise LayerUnavailable(f"torch is not installed ({exc})") from exc
    if not torch.cuda.is_available():
        raise LayerUnavailable("torch sees no CUDA device (torch.cuda.is_available() is False)")
    return torch


def build_torch(ctx: FloorContext, _args: int) -> LayerWorkloads:
    torch = _torch()
    device = torch.device("cuda", ctx.device)
    stream = torch.cuda.ExternalStream(ctx.stream.ptr, device=device)
    previous = torch.cuda.current_stream(device)
    torch.cuda.set_stream(stream)
    ctx.closers.append(lambda: torch.cuda.set_stream(previous))
    a = torch.ones(ELEMENTS, device=device)
    b = torch.ones(ELEMENTS, device=device)
    call = partial(torch.Tensor.mul_, a, b)
    call()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(ctx.nodes):
            call()
    ctx.shared.setdefault("torch", []).append((graph, a, b))
    loop = partial(LaunchLoop, stream=ctx.stream, clock=ctx.clock, max_in_flight=ctx.max_in_flight)
    return LayerWorkloads(
        {"eager": loop([call] * ctx.nodes, ctx.nodes), "graph": loop([graph.replay], ctx.nodes)}, ctx.nodes
    )
