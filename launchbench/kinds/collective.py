"""``all_reduce``, ``all_gather``, ``reduce_scatter``, ``broadcast``: NCCL collectives between the ranks
of a scenario on several GPUs (``devices:``), through ``cupy.cuda.nccl`` on the step's stream; each rank
runs the chain on its own GPU, in its own process, and the collectives pair the ranks up.

Every rank's send buffer holds small whole numbers (0 to 15) drawn from a generator seeded by the rank
and the step, so sums are exact in any order and every rank computes every rank's input, hence the
collective's result (``reference``), on the host. Out of place: the send buffer is never written, so one
chain iteration leaves the same result however often it repeats.
"""

from __future__ import annotations

import zlib
from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import Field

from launchbench.errors import LaunchbenchError
from launchbench.kinds import base
from launchbench.kinds.base import INPUT_SEED, BuildContext, BuiltStep, KindProblem, KindSpec, StepBase
from launchbench.kinds.fields import Int

MAX_COLLECTIVE_ELEMENTS = 1 << 30
_OPS = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class CollectiveStep(StepBase):
    """An NCCL collective between the scenario's ranks (one per GPU): all_reduce (``size`` elements),
    all_gather (each rank gives ``size``, gets size × ranks), reduce_scatter (each rank gives size ×
    ranks, gets its reduced ``size``), broadcast (rank ``root``'s ``size`` elements to every rank)."""

    kind: Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    size: Int = Field(..., ge=1, le=MAX_COLLECTIVE_ELEMENTS, description="elements of each rank's chunk")
    dtype: Literal["float32", "float64", "int32"] = "float32"
    op: Literal["sum", "max", "min"] = Field(
        "sum", description="all_reduce and reduce_scatter: the reduction"
    )
    root: Int = Field(0, ge=0, description="broadcast: the rank whose buffer every rank receives")


def send_count(step: CollectiveStep, world: int) -> int:
    return step.size * world if step.kind == "reduce_scatter" else step.size


def recv_count(step: CollectiveStep, world: int) -> int:
    return step.size * world if step.kind == "all_gather" else step.size


def rank_input(step: CollectiveStep, prefix: str, rank: int, world: int) -> np.ndarray:
    """What rank ``rank`` sends: the same numbers in every run and on every rank that computes them."""
    rng = np.random.default_rng([INPUT_SEED, zlib.crc32(prefix.encode()), rank])
    return rng.integers(0, 16, send_count(step, world)).astype(step.dtype)


def expected(step: CollectiveStep, prefix: str, rank: int, world: int) -> np.ndarray:
    """What rank ``rank`` receives, computed on the host from every rank's input."""
    inputs = [rank_input(step, prefix, r, world) for r in range(world)]
    if step.kind == "all_gather":
        return np.concatenate(inputs)
    if step.kind == "broadcast":
        return inputs[step.root].copy()
    reduced = inputs[0].copy()
    for other in inputs[1:]:
        _OPS[step.op](reduced, other, out=reduced)
    if step.kind == "reduce_scatter":
        return reduced[rank * step.size : (rank + 1) * step.size].copy()
    return reduced


def ranks_problem(step: CollectiveStep, ranks: int) -> KindProblem | None:
    """A broadcast's root must be one of the ranks."""
    if step.kind == "broadcast" and step.root >= ranks:
        return KindProblem(
            f"broadcast root {step.root} is not a rank: the scenario has devices 0..{ranks - 1}", ("root",)
        )
    return None


def nbytes(step: CollectiveStep) -> int:
    # the ranks are not known here: the largest buffer is size × ranks for all_gather and
    # reduce_scatter; counted for 8 ranks, the most one host usually has
    chunks = 8 if step.kind in ("all_gather", "reduce_scatter") else 1
    return step.size * np.dtype(step.dtype).itemsize * (2 * chunks + 1)


def build(step: CollectiveStep, context: BuildContext, prefix: str, stream: Any) -> BuiltStep:
    import cupy
    from cupy.cuda import nccl

    comm, rank, world = context.communicator, context.rank, context.world
    if comm is None:  # scenarios refuse this on validation; a rank always has a communicator
        raise LaunchbenchError(f"a {step.kind} step needs a scenario on 2 or more devices (devices: 2)")
    problem = ranks_problem(step, world)
    if problem is not None:
        raise LaunchbenchError(problem.message)
    send = cupy.asarray(rank_input(step, prefix, rank, world))
    recv = cupy.zeros(recv_count(step, world), dtype=step.dtype)
    kind = {"float32": nccl.NCCL_FLOAT32, "float64": nccl.NCCL_FLOAT64, "int32": nccl.NCCL_INT32}[step.dtype]
    op = {"sum": nccl.NCCL_SUM, "max": nccl.NCCL_MAX, "min": nccl.NCCL_MIN}[step.op]
    s, r, p = send.data.ptr, recv.data.ptr, stream.ptr
    if step.kind == "all_reduce":
        call = partial(comm.allReduce, s, r, step.size, kind, op, p)
    elif step.kind == "all_gather":
        call = partial(comm.allGather, s, r, step.size, kind, p)
    elif step.kind == "reduce_scatter":
        call = partial(comm.reduceScatter, s, r, step.size, kind, op, p)
    else:
        call = partial(comm.broadcast, s, r, step.size, kind, step.root, p)
    built = BuiltStep([call] * step.repeat, keep=[send])
    base.with_initial(recv, built, f"{prefix}.recv")
    built.reference = lambda: {f"{prefix}.recv": expected(step, prefix, rank, world)}
    return built


KIND = KindSpec(
    model=CollectiveStep,
    build=build,
    nbytes=nbytes,
    nodes_per_launch=None,  # NCCL decides the nodes of a captured collective
    takes_stream=True,
    summary="NCCL collectives between the ranks of a scenario with `devices: 2` or more "
    "([multi-gpu.md](multi-gpu.md))",
    examples=(
        {"kind": "all_reduce", "size": 64, "op": "max"},
        {"kind": "all_gather", "size": 64, "dtype": "float64"},
        {"kind": "reduce_scatter", "size": 64, "dtype": "int32"},
        {"kind": "broadcast", "size": 64, "root": 1},
    ),
    collective=True,
    check_ranks=ranks_problem,
)
