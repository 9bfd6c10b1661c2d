"""The environment of a process launchbench starts as a program (ab's program workers, the floor's layer
processes): this launchbench's source first on PYTHONPATH, so the child imports the same code."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this launchbench package


def source_first(paths: Sequence[str] = (), variables: Mapping[str, str] | None = None) -> dict[str, str]:
    """The current environment with ``variables`` over it, and PYTHONPATH: this launchbench's source,
    then ``paths`` (resolved), then what PYTHONPATH held, each once."""
    env = {**os.environ, **(variables or {})}
    inherited = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    ordered = [str(SOURCE_ROOT), *(str(Path(p).resolve()) for p in paths), *inherited]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(ordered))
    return env
