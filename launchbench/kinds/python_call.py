"""How a ``python`` step imports and calls the user's function: "module:function", called once at
build time to allocate its buffers; what it returns launches one iteration of the user's work.

The contract (docs/scenarios.md):

    def my_workload(xp, stream, **args):
        ...allocate every buffer here (before any capture)...
        return {"run": run, "outputs": {"y": y}, "reset": reset}   # or just `return run`

``run`` is a zero-argument callable that launches one iteration on the current stream, writing only
with ``out=`` or in place; ``outputs`` (name → array, device or host) are compared eager against graph;
``reset`` restores their initial contents (without it, launchbench snapshots the outputs after the
build and restores them). An object with attributes ``run``/``outputs``/``reset`` works as a dict does.

Nothing here imports CuPy: the backend passes it in as ``xp``.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from launchbench.errors import LaunchbenchError

RESULT_KEYS = ("run", "outputs", "reset")


class PythonStepError(LaunchbenchError):
    """A python step whose function cannot be imported, fails, or returns something unusable."""


@dataclass
class UserWorkload:
    run: Callable[[], Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    reset: Callable[[], Any] | None = None


@dataclass(frozen=True)
class ArrayRule:
    """Which output values a kind accepts (``test``), and how its messages name them (``text``)."""

    test: Callable[[Any], bool]
    text: str


def _where(spec: str, source: str, kind: str = "python") -> str:
    return f"{source or '<no scenario file>'}: {kind} step '{spec}'"


@contextlib.contextmanager
def _scenario_dir_on_path(source: str) -> Iterator[None]:
    """Put the scenario file's folder first on sys.path while importing (modules beside the file win)."""
    folder = str(Path(source).resolve().parent) if source else None
    if folder is None:
        yield
        return
    sys.path.insert(0, folder)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the imported code removed it already
            sys.path.remove(folder)


def load_callable(spec: str, source: str, kind: str = "python") -> Callable[..., Any]:
    """Import ``module:function`` (from sys.path, or the folder of the scenario file ``source``) for a
    step of ``kind``."""
    where = _where(spec, source, kind)
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name:
        raise PythonStepError(f"{where}: callable must be 'module:function'")
    try:
        with _scenario_dir_on_path(source):
            module = importlib.import_module(module_name)
    except Exception as err:  # noqa: BLE001 - ImportError, SyntaxError, or anything the module raises
        folder = Path(source).resolve().parent if source else None
        searched = f" (searched sys.path and {folder})" if folder else ""
        raise PythonStepError(
            f"{where}: cannot import module '{module_name}'{searched}: {type(err).__name__}: {err}"
        ) from None
    function = getattr(module, function_name, None)
    if function is None:
        raise PythonStepError(
            f"{where}: module '{module_name}' ({getattr(module, '__file__', '?')}) has no function '{function_name}'"
        )
    if not callable(function):
        raise PythonStepError(
            f"{where}: '{function_name}' in module '{module_name}' is a {type(function).__name__}, not a function"
        )
    return function


def call_user_function(
    function: Callable[..., Any],
    spec: str,
    source: str,
    passed: Mapping[str, Any],
    args: Mapping[str, Any],
    arrays: ArrayRule | None = None,
    kind: str = "python",
) -> UserWorkload:
    """Call the user's function once (it allocates) with the keywords launchbench ``passed`` (a python
    step's ``xp`` and ``stream``) and the step's ``args``, and check what it returned."""
    where = _where(spec, source, kind)
    try:
        result = function(**dict(passed), **dict(args))
    except LaunchbenchError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's code: report it with the step it belongs to
        raise PythonStepError(f"{where}: the function raised {type(err).__name__}: {err}") from err
    return normalise_result(result, spec, source, passed.get("xp"), arrays, kind)


def normalise_result(
    result: Any, spec: str, source: str, xp: Any = None, arrays: ArrayRule | None = None, kind: str = "python"
) -> UserWorkload:
    """The function's result as a UserWorkload; outputs must pass ``arrays`` (default: CuPy or NumPy
    arrays, CuPy being ``xp``)."""
    where = _where(spec, source, kind)
    rule = arrays or ArrayRule(partial(_is_array, xp=xp), "a CuPy or NumPy array")
    expected = "a zero-argument callable, or a dict or object with 'run' (and optional 'outputs', 'reset')"
    if isinstance(result, Mapping):
        unknown = sorted(str(k) for k in result if k not in RESULT_KEYS)
        if unknown:
            raise PythonStepError(
                f"{where}: the returned dict has unknown key(s) {', '.join(unknown)}; expected {expected}"
            )
        run, outputs, reset = result.get("run"), result.get("outputs"), result.get("reset")
    elif hasattr(result, "run"):
        run, outputs, reset = result.run, getattr(result, "outputs", None), getattr(result, "reset", None)
    elif callable(result):
        run, outputs, reset = result, None, None
    else:
        raise PythonStepError(f"{where}: the function returned {type(result).__name__}; expected {expected}")
    if not callable(run):
        raise PythonStepError(
            f"{where}: 'run' is a {type(run).__name__}, not a callable; expected {expected}"
        )
    if reset is not None and not callable(reset):
        raise PythonStepError(f"{where}: 'reset' is a {type(reset).__name__}, not a callable")
    if outputs is None:
        outputs = {}
    if not isinstance(outputs, Mapping):
        raise PythonStepError(
            f"{where}: 'outputs' is a {type(outputs).__name__}; expected a dict of name → array"
        )
    checked: dict[str, Any] = {}
    for name, array in outputs.items():
        if not isinstance(name, str) or not name:
            raise PythonStepError(f"{where}: output names must be non-empty strings, not {name!r}")
        if not rule.test(array):
            raise PythonStepError(
                f"{where}: output '{name}' is a {type(array).__name__}; expected {rule.text}"
            )
        checked[name] = array
    return UserWorkload(run=run, outputs=checked, reset=reset)


def _is_array(value: Any, xp: Any) -> bool:
    import numpy as np

    if isinstance(value, np.ndarray):
        return True
    return xp is not None and isinstance(value, xp.ndarray)
