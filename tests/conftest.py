"""The `gpu` marker: GPU tests skip, with a reason, where CuPy or a CUDA device is missing; collection
with the cyclic collector off, and the objects it made (every test module, the libraries they import)
frozen out of the garbage collector; one BLAS thread in the test processes and every process they
start; launchbench's bytecode compiled once for the processes they start where Python writes none."""

from __future__ import annotations

import compileall
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

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))


def pytest_configure(config: pytest.Config) -> None:
    """Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, -B), every process the tests start (the
    worker processes, `python -m launchbench`: some two hundred a session) compiled launchbench and the
    fakes it imports from source again, about 30 ms of each one's start on the 2-core CPU machine. They
    are compiled here once, by the main process before any test (or xdist worker) starts, into the
    usual __pycache__ folders (git ignores them; a .pyc whose source changed is not used): Python still
    reads bytecode where it writes none."""
    if sys.dont_write_bytecode and not hasattr(config, "workerinput"):
        _compile_for_children()


def _compile_for_children() -> None:
    import launchbench

    compileall.compile_dir(Path(launchbench.__file__).parent, quiet=2)  # a tree it cannot write: as before
    for helper in TESTS.glob("*.py"):  # the fakes and builders the processes import from tests/
        if not helper.name.startswith(("test_", "conftest")):
            compileall.compile_file(helper, quiet=2)


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
