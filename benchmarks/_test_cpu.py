"""A pytest plugin for benchmarks/speed_tests.py (loaded with `-p _test_cpu`): the CPU seconds of each
test (setup, call and teardown; this process and the child processes it waited for) and of the
collection, written per process as JSON into the folder $LAUNCHBENCH_TEST_CPU_DIR names.

The CPU time of a test barely moves with the load of the machine, where its wall time stretches with
it: the per-file totals say where the suite's time goes on a shared machine as on an idle one.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path

import pytest

VARIABLE = "LAUNCHBENCH_TEST_CPU_DIR"
_tests: list[dict[str, object]] = []
_collection: dict[str, float] = {}


def cpu_s() -> float:
    """User + system seconds of this process and of the children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_collection_finish(session: pytest.Session) -> None:
    _collection["cpu_s"] = cpu_s()  # from the start of the process: imports, plugins, collection


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, None, None]:
    cpu, wall = cpu_s(), time.perf_counter()
    yield
    _tests.append({"test": item.nodeid, "cpu_s": cpu_s() - cpu, "wall_s": time.perf_counter() - wall})


def pytest_sessionfinish(session: pytest.Session) -> None:
    folder = os.environ.get(VARIABLE)
    if not folder or not _tests:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    document = {"worker": worker, "collection_cpu_s": _collection.get("cpu_s", 0.0), "tests": _tests}
    (Path(folder) / f"{worker}.json").write_text(json.dumps(document), encoding="utf-8")
