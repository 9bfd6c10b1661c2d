"""The host-level fit's library, imported by the parent while the first worker starts.

The parent fits host levels once a case has MIN_PASSES passes (extra_passes), between two passes, and
the first fit imports scikit-learn: on the H200 machine the quickstart's writing at its fourth pass,
where the first fits come, took 1.88 s with the import there and 0.40 s with it done early
(results/speed/profile-h200-b), time in which nothing is measured but nothing else goes on either. Started
in a thread as the run begins, the import overlaps the first worker's start instead; the run waits for
it before its first case, so no import runs in the parent while a case is measured. Only where the
workers are the real GPU backend's, CuPy is installed and some case plans enough passes for a fit."""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Sequence
from typing import Any

from launchbench.measure.levels import MIN_PASSES, import_fit_library
from launchbench.run.worker import cupy_backend
from launchbench.scenario.core import Case


def wants_fit_library(cases: Sequence[Case], backend_factory: Callable[[int], Any]) -> bool:
    """Whether the run measures on the GPU backend, CuPy is installed (where it is not, the run is refused
    before any case, and nothing would fit) and some case plans MIN_PASSES passes or more."""
    return (
        backend_factory is cupy_backend
        and any(case.measure.passes >= MIN_PASSES for case in cases)
        and importlib.util.find_spec("cupy") is not None
    )


def start_fit_library_import() -> threading.Thread:
    """The fit library's import, begun in a daemon thread (``join`` waits for it)."""
    thread = threading.Thread(target=_import_quietly, name="launchbench-fit-import", daemon=True)
    thread.start()
    return thread


def _import_quietly() -> None:
    try:
        import_fit_library()
    except Exception:  # noqa: BLE001 - the first fit imports it again and reports what is wrong
        return
