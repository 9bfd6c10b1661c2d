"""The ranks of a case on several GPUs, one process per GPU: their NCCL communicator, and the control
channel that keeps them in step (RankControl), both on the rank's main stream.

The control channel is itself NCCL: rank 0's command is broadcast from a small device buffer and read
back on every rank, outside every timed region, so every rank starts the batch that follows once the
broadcast has reached its GPU (a host channel through the parent would add a message's trip through
the parent between the ranks' starts, inside the timing of the rank that starts first).
"""

from __future__ import annotations

import os
from typing import Any

import cupy
import numpy as np

from launchbench.backend.base import RankInfo
from launchbench.kinds.buffers import pinned_empty

HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2
NVLS_VARIABLE = "NCCL_NVLS_ENABLE"  # NVLink multicast (NVLS) stays off: launchbench never uses it


def unique_id() -> Any:
    from cupy.cuda import nccl

    return nccl.get_unique_id()


def communicator(ranks: RankInfo) -> Any:
    """This rank's communicator (blocks until every rank has joined)."""
    os.environ[NVLS_VARIABLE] = "0"
    from cupy.cuda import nccl

    return nccl.NcclCommunicator(ranks.world, ranks.unique_id, ranks.rank)


class NcclControl:
    """RankControl over NCCL on ``stream``."""

    def __init__(self, comm: Any, stream: cupy.cuda.Stream, rank: int):
        from cupy.cuda import nccl

        self._nccl = nccl
        self.comm = comm
        self.stream = stream
        self.rank = rank
        self.device = cupy.zeros(3, dtype=cupy.int64)
        self.host = pinned_empty(3, np.int64)

    def exchange(self, command: tuple[int, int, int] | None) -> tuple[int, int, int]:
        runtime = cupy.cuda.runtime
        ptr, nbytes = self.device.data.ptr, self.device.nbytes
        if command is not None:
            self.host[:] = command
            runtime.memcpyAsync(ptr, self.host.ctypes.data, nbytes, HOST_TO_DEVICE, self.stream.ptr)
        self.comm.broadcast(ptr, ptr, 3, self._nccl.NCCL_INT64, 0, self.stream.ptr)
        runtime.memcpyAsync(self.host.ctypes.data, ptr, nbytes, DEVICE_TO_HOST, self.stream.ptr)
        self.stream.synchronize()
        kind, mode, iters = (int(v) for v in self.host)
        return kind, mode, iters

    def common(self, flags: list[int]) -> list[int]:
        values = cupy.asarray(np.asarray(flags, dtype=np.int32))
        ptr = values.data.ptr
        self.comm.allReduce(ptr, ptr, len(flags), self._nccl.NCCL_INT32, self._nccl.NCCL_MIN, self.stream.ptr)
        self.stream.synchronize()
        return [int(v) for v in values.get()]
