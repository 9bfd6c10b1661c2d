"""Imported by the fork server as it starts (launchbench.run.worker_start): what every worker imports,
so a forked worker begins with it done. Never a CUDA call: CuPy's import loads its libraries without
initializing the driver, and the fork server never touches a GPU.

One BLAS thread in the server: OpenBLAS starts its threads as NumPy is imported, and a fork of a process
with threads running holds only the thread that forked. Workers do no linear algebra, so one thread is
all they need."""

from __future__ import annotations

import contextlib
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import launchbench.run.worker  # noqa: E402,F401 - imported for the workers forked from here

with contextlib.suppress(Exception):  # no CuPy, or a broken one: the worker's own start says which
    import launchbench.backend.cupy_backend  # noqa: F401
