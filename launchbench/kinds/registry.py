"""The step kinds: every module of this package that defines ``KIND`` (a KindSpec), so a new kind is one
new module. The scenario schema builds its Step union from KINDS, the backend builds steps through
spec_of, and the run checks graph node counts against nodes_per_launch."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Iterable
from typing import Any

from launchbench import kinds as _package
from launchbench.kinds.base import KindSpec


def _discover() -> tuple[KindSpec, ...]:
    specs = []
    for info in sorted(pkgutil.iter_modules(_package.__path__), key=lambda info: info.name):
        spec = getattr(importlib.import_module(f"{_package.__name__}.{info.name}"), "KIND", None)
        if isinstance(spec, KindSpec):
            specs.append(spec)
    return tuple(specs)


KINDS: tuple[KindSpec, ...] = _discover()
SPEC_BY_KIND: dict[str, KindSpec] = {kind: spec for spec in KINDS for kind in spec.kinds}


def spec_of(step: Any) -> KindSpec:
    """The spec of a validated step model."""
    return SPEC_BY_KIND[step.kind]


def step_bytes(step: Any) -> int:
    """Device memory a step allocates (buffers and their initial copies), to refuse what cannot fit."""
    return spec_of(step).nbytes(step)


def missing_requirement(steps: Iterable[Any]) -> tuple[str, str] | None:
    """The first (kind, module) among ``steps`` whose kind requires a module that is not installed
    (looked up without importing it), None where every requirement is met."""
    seen: set[str] = set()
    for step in steps:
        for module in spec_of(step).requires:
            if module not in seen and importlib.util.find_spec(module) is None:
                return step.kind, module
            seen.add(module)
    return None
