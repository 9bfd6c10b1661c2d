"""Running a plan: the runner, its executors (in-process or worker processes) and one case's execution.

The package is callable: ``launchbench.run(scenario, ...)`` is ``launchbench.api.run`` (the name is both
this package and the API's function)."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any


class _CallablePackage(ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """launchbench.api.run(*args, **kwargs)."""
        from launchbench.api import run

        return run(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
