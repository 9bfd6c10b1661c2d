"""The `gpu` marker: GPU tests skip, with a reason, where CuPy or a CUDA device is missing; collection
with the cyclic collector off, and the objects it made (every test module, the libraries they import)
frozen out of the garbage collector; one BLAS thread in the test processes and every process they
start."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

from launchbench.pytest_plugin import gpu_problem as _gpu_problem  # the fixture's own check

# Before anything imports NumPy: OpenBLAS starts a thread per core at import, which costs each worker
# and `python -m launchbench` process the tests start about a fifth of its CPU time on 2 cores, and no
# test multiplies matrices large enough to gain from a second thread. A value already set is kept.
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).parent))


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collection with the cyclic collector off: importing the test modules (and what they import)
    builds the objects that live for the whole session, and each of the collector's full passes while
    they grow walked all of them again (about a quarter of a collection's CPU time)."""
    from launchbench.results.document import paused_collector  # after the BLAS variables above

    with paused_collector():
        return (yield)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection built (the test modules, matplotlib, pandas, scipy, hypothesis: hundreds of
    thousands of objects that live for the whole session) to the collector's permanent generation, so
    that each full collection (the product's own gc.collect() after every figure, and Python's) walks
    only what the tests made since, not the whole heap again."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    problem = _gpu_problem()
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"needs a GPU: {problem}")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def backend():
    """The product's CuPy backend on device 0 with the system clock, shared by the GPU test modules."""
    from launchbench.backend.cupy_backend import CupyBackend
    from launchbench.measure.clock import SystemClock

    return CupyBackend(0, SystemClock())
