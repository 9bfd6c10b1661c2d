"""Imported by the fork servers as they start (launchbench.run.worker_start, launchbench.run.program_server):
what every worker imports and the validators of the results it sends, so a forked worker begins with
them done. Never a CUDA call: CuPy's import loads its libraries without initializing the driver, and the
fork server never touches a GPU.

One BLAS thread in the server: OpenBLAS starts its threads as NumPy is imported, and a fork of a process
with threads running holds only the thread that forked. Workers do no linear algebra, so one thread is
all they need."""

from __future__ import annotations

import contextlib
import os

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy.ma  # noqa: E402,F401 - np.median loads it on its first call (the stopping rule, the harness cost)
import numpy.random  # noqa: E402,F401 - loaded by the inputs' first generator (backend.step_builder)
from pydantic import BaseModel  # noqa: E402

import launchbench.run.worker  # noqa: E402,F401 - imported for the workers forked from here
from launchbench.results import schema  # noqa: E402

# defer_build leaves a model's validator to its first use: those of the results models (and of the metadata
# models they name) built here once, so a forked worker begins with them (with numpy.ma and numpy.random
# above, about 40 ms of every fork on the 2-core CPU machine: results/speed/worker-forks-2026-12-07.json)
for _model in list(vars(schema).values()):
    if isinstance(_model, type) and issubclass(_model, BaseModel) and _model is not BaseModel:
        _model.model_rebuild()

with contextlib.suppress(Exception):  # no CuPy, or a broken one: the worker's own start says which
    import launchbench.backend.cupy_backend  # noqa: F401
