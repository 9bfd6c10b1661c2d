"""launchbench: what launching a chain of GPU kernels one by one costs, and what a CUDA Graph saves.

``launchbench.run``, ``launchbench.load`` and ``launchbench.compare`` (and the ``Run`` and ``Comparison``
they return) are launchbench.api's, loaded on first use: importing the package, or ``launchbench.errors``,
loads nothing else. ``launchbench.run`` is also the package of the runner; that package is callable and
calls ``launchbench.api.run`` (typed code imports ``run`` from ``launchbench.api``)."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

API_NAMES = ("load", "compare", "Run", "Comparison")  # re-exported from launchbench.api on first use


def __getattr__(name: str) -> Any:
    """launchbench.api's names, imported when first asked for; ``run``: the callable runner package."""
    if name == "run":
        import importlib

        return importlib.import_module("launchbench.run")
    if name in API_NAMES:
        from launchbench import api

        return getattr(api, name)
    raise AttributeError(f"module 'launchbench' has no attribute {name!r}")
