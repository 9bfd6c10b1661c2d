"""How the runner starts its worker processes.

Where the platform has multiprocessing's fork server (Linux), every worker is forked from it: the
server is a fresh interpreter, started once per launchbench process (by ``launchbench run`` before it
loads the scenarios, so its imports overlap the command's, else with the first worker), that imported
the worker's modules and CuPy (``launchbench.run.fork_prelude``; no CUDA call, so a fork of it is a
clean start for the driver), and each worker then begins in 0.04–0.05 s instead of the 0.62–1.04 s a
fresh interpreter took to import them in the quickstart on the H200 machine
(results/speed/profile-h200-b). Elsewhere workers are spawned as fresh interpreters, as before.

A forked worker still starts as a process of its own: its CUDA context, its NVML handle and the host
level it lands at are its own (results/speed/start-methods: forked processes' eager launch costs spread
over 4.95–6.86 µs, spawned ones' over 4.86–6.65 µs). What it does not get fresh from the parent is what
the server held when it started, so the parent sends the rest with each worker (``ProcessState``: the
environment, the import path, the working directory and the CPUs as they are when the worker is
started), and the worker takes them on before anything else."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from dataclasses import dataclass
from multiprocessing.context import ForkServerContext, SpawnContext

PRELUDE = "launchbench.run.fork_prelude"


@dataclass(frozen=True)
class ProcessState:
    """What a worker takes over from the parent as it begins: environment variables, ``sys.path``, the
    working directory and the CPUs it may run on (the starting thread's: a device's thread pins itself
    and its workers, launchbench.run.devices), as they were when the parent started it."""

    environ: tuple[tuple[str, str], ...]
    path: tuple[str, ...]
    cwd: str
    cpus: frozenset[int] | None  # None where the platform has no CPU affinity

    @classmethod
    def current(cls) -> ProcessState:
        """The calling thread's state."""
        return cls(tuple(os.environ.items()), tuple(sys.path), os.getcwd(), _affinity())

    def adopt(self) -> None:
        """Make this process's environment, import path, working directory and CPUs the parent's."""
        if self.cpus is not None:
            os.sched_setaffinity(0, self.cpus)
        os.environ.clear()
        os.environ.update(dict(self.environ))
        sys.path[:] = list(self.path)
        with contextlib.suppress(OSError):  # the parent's folder is gone: no path relative to it is read
            os.chdir(self.cwd)


def _affinity() -> frozenset[int] | None:
    return frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def worker_context() -> ForkServerContext | SpawnContext:
    """The fork server's context where the platform has one and its server runs (started here, importing
    PRELUDE, the first time), else spawn's: a server that cannot start (no writable folder for its
    socket, say) leaves every worker spawned as a fresh interpreter."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        multiprocessing.set_forkserver_preload([PRELUDE])
        try:
            forkserver.ensure_running()
        except OSError:
            return multiprocessing.get_context("spawn")
        return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context("spawn")
