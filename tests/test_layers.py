"""Import direction between launchbench's packages: a module never imports one on a higher layer.

Layers, low to high: errors (with the package's ``__init__`` and other top-level modules) < the step kinds
(``kinds``) < scenario < measure < results < backend < run < analysis < history < report < fleet
< api (``api`` and ``pytest_plugin``: the Python API and the pytest plugin on it) < cli (``__main__`` with
it). Every import counts, the lazy ones inside functions too, with one exception, named in LAZY_REEXPORTS:
the package's ``__getattr__`` re-exports the API's names (``launchbench.run`` is the runner package, whose
``__call__`` is the API's ``run``), imported on first use. CuPy, cuda.bindings and NVML are imported at
module level only by backend modules outside ``kinds``, so the rest imports on a machine without a GPU.

No two modules import each other, directly or round a longer loop, at import time: the cycle check
follows the imports at module level (``import``/``from`` statements and ``importlib.import_module``
calls outside functions), and leaves out the lazy imports inside functions (they run after every module
has loaded, so they cannot leave one half-initialised) and those under ``if TYPE_CHECKING:`` (never run).
A package's ``__init__`` counts as a module of its own; a submodule's implicit load of its parent
packages is not an edge.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from builders import plant_package

PACKAGE = Path(__file__).resolve().parent.parent / "launchbench"
LAYERS = (
    "errors",
    "kinds",
    "scenario",
    "measure",
    "results",
    "backend",
    "run",
    "analysis",
    "history",
    "report",
    "fleet",
    "api",
    "cli",
)
API_MODULES = ("launchbench.api", "launchbench.pytest_plugin")  # top-level modules on the api layer
# (module, the function of it) → what that function may import from a higher layer: the lazy re-exports
# of the API's names (launchbench.run, launchbench.load, ...), nothing else
LAZY_REEXPORTS: dict[tuple[str, str], tuple[str, ...]] = {
    ("launchbench", "__getattr__"): ("launchbench.api", "launchbench.run"),
    ("launchbench.run", "__call__"): ("launchbench.api",),
}
GPU_MODULES = ("cupy", "cupyx", "cuda", "pynvml")


def layer_of(module: str, packages: frozenset[str] = frozenset()) -> str | None:
    """The layer of a launchbench module ('launchbench.x.y'), None for a module outside launchbench, and
    '' for a launchbench module no layer holds; ``packages`` names launchbench's subpackages."""
    parts = module.split(".")
    if parts[0] != "launchbench":
        return None
    if module == "launchbench.__main__":
        return "cli"
    if module in API_MODULES:
        return "api"
    if len(parts) == 1 or (len(parts) == 2 and module not in packages):
        return "errors"  # the package itself and its top-level modules (errors, shared helpers)
    return parts[1] if parts[1] in LAYERS else ""


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class Import:
    target: str
    line: int
    top_level: bool  # runs at import time: at module level, not inside a function or `if TYPE_CHECKING:`
    function: str | None = None  # the innermost function it is in


def imports(source: str, module: str, is_package: bool) -> Iterator[Import]:
    """Every module ``source`` imports, lazy imports inside functions and ``importlib.import_module``
    calls with a literal name included; ``from a import b`` yields ``a.b`` (b may be a module). Found
    once per source text, module and package flag: the cycle test and the layer test read the same
    files."""
    return iter(_imports(source, module, is_package))


@functools.cache
def _imports(source: str, module: str, is_package: bool) -> tuple[Import, ...]:
    return tuple(_scan_imports(source, module, is_package))


def _scan_imports(source: str, module: str, is_package: bool) -> Iterator[Import]:
    tree = ast.parse(source)
    inside_function: dict[int, str] = {}  # node → its innermost function (ast.walk goes outside in)
    type_checking: set[int] = set()  # nodes under `if TYPE_CHECKING:` (never run)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            name = node.name if not isinstance(node, ast.Lambda) else "<lambda>"
            inside_function.update((id(child), name) for child in ast.walk(node) if child is not node)
        elif _type_checking(node):
            type_checking.update(id(child) for child in ast.walk(node) if child is not node)
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        top = id(node) not in inside_function and id(node) not in type_checking
        function = inside_function.get(id(node))
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(alias.name, node.lineno, top, function)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Import(
                    f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno, top, function
                )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield Import(node.args[0].value, node.lineno, top, function)


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block (its imports never run; counted as lazy)."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else ""
    return name == "TYPE_CHECKING"


def _known_prefix(target: str, known: set[str]) -> str | None:
    """The longest prefix of an imported name that is a launchbench module, None for none."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _layer_of_target(target: str, known: set[str], packages: frozenset[str]) -> str | None:
    """The layer of an imported name: the longest prefix of it that is a launchbench module."""
    parts = target.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return layer_of(candidate, packages)
    return layer_of(target, packages)


def _reexported(module: str, imp: Import, known: set[str], packages: frozenset[str]) -> bool:
    """An import LAZY_REEXPORTS allows: inside the named function, of (a name in) a module it names."""
    allowed = LAZY_REEXPORTS.get((module, imp.function or ""), ())
    return any(imp.target == name or imp.target.startswith(name + ".") for name in allowed)


def violations(root: Path) -> list[str]:
    """Imports of a higher layer, modules on no layer, and module-level GPU imports outside the backend,
    for the package at ``root``; each as 'path:line: message'."""
    files = sorted(root.rglob("*.py"))
    known = {module_name(path, root) for path in files}
    packages = frozenset(module_name(path, root) for path in files if path.name == "__init__.py")
    found: list[str] = []
    for path in files:
        module = module_name(path, root)
        where = path.relative_to(root.parent)
        own = layer_of(module, packages)
        if not own:
            found.append(f"{where}:1: module {module} is on no layer")
            continue
        for imp in imports(path.read_text(), module, path.name == "__init__.py"):
            target = _layer_of_target(imp.target, known, packages)
            if target is None:
                gpu = imp.target.split(".")[0] in GPU_MODULES
                if gpu and imp.top_level and own != "backend":
                    found.append(f"{where}:{imp.line}: {module} ({own}) imports {imp.target} at module level")
                continue
            if _reexported(module, imp, known, packages):
                continue
            if not target:
                found.append(f"{where}:{imp.line}: {module} imports {imp.target}, which is on no layer")
            elif LAYERS.index(target) > LAYERS.index(own):
                found.append(
                    f"{where}:{imp.line}: {module} ({own}) imports {imp.target} ({target}), a higher layer"
                )
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the launchbench modules it imports at module level (lazy and TYPE_CHECKING imports left
    out), for the package at ``root``."""
    files = sorted(root.rglob("*.py"))
    known = {module_name(path, root) for path in files}
    graph: dict[str, set[str]] = {}
    for path in files:
        module = module_name(path, root)
        edges = graph.setdefault(module, set())
        for imp in imports(path.read_text(), module, path.name == "__init__.py"):
            target = _known_prefix(imp.target, known)
            if imp.top_level and target is not None and target != module:
                edges.add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_between_modules() -> None:
    assert cycles(import_graph(PACKAGE)) == []


def test_no_module_imports_a_higher_layer() -> None:
    assert violations(PACKAGE) == []


def test_every_package_has_a_layer() -> None:
    packages = frozenset(module_name(path, PACKAGE) for path in PACKAGE.rglob("__init__.py")) - {
        "launchbench"
    }
    assert packages, "no packages found"
    for package in packages:
        assert layer_of(package, packages), package


# ------------------------------------------------------------------------------------ the checker itself


def test_a_lazy_import_of_a_higher_layer_is_found(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "analysis/stats.py": "def median(): pass\n",
            "measure/stopping.py": "def rule():\n    from launchbench.analysis.stats import median\n    return median\n",
        },
    )
    assert violations(root) == [
        "launchbench/measure/stopping.py:2: launchbench.measure.stopping (measure) imports "
        "launchbench.analysis.stats.median (analysis), a higher layer"
    ]


@pytest.mark.parametrize(
    "statement",
    [
        "import launchbench.report.console",
        "from launchbench.report import console",
        "from ..report import console",
        "import importlib\nimportlib.import_module('launchbench.report.console')",
    ],
)
def test_every_spelling_of_an_import_is_found(tmp_path: Path, statement: str) -> None:
    root = plant_package(tmp_path, {"report/console.py": "", "results/store.py": statement + "\n"})
    (found,) = violations(root)
    assert "launchbench.results.store (results) imports launchbench.report" in found


def test_imports_down_and_within_a_layer_pass(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "kinds/empty.py": "from launchbench.errors import LaunchbenchError\n",
            "scenario/model.py": "from launchbench.kinds import empty\nfrom . import core\n",
            "scenario/core.py": "import launchbench\n",
            "cli/run.py": "def run():\n    from launchbench.scenario.model import x\n",
            "__main__.py": "from launchbench.cli.run import run\n",
        },
    )
    assert violations(root) == []


def test_the_kind_definitions_sit_below_the_backend(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path, {"backend/base.py": "", "kinds/empty.py": "from launchbench.backend import base\n"}
    )
    (found,) = violations(root)
    assert "(kinds) imports launchbench.backend.base (backend)" in found


def test_module_level_gpu_imports_outside_the_backend_are_found(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "backend/graph.py": "import cupy\n",
            "kinds/empty.py": "import cupy\n\ndef build():\n    import cupy\n",
            "measure/clock.py": "def read():\n    import pynvml\n",
        },
    )
    assert violations(root) == [
        "launchbench/kinds/empty.py:1: launchbench.kinds.empty (kinds) imports cupy at module level"
    ]


def test_a_module_on_no_layer_is_found(tmp_path: Path) -> None:
    root = plant_package(tmp_path, {"extras/thing.py": ""})
    assert any("module launchbench.extras is on no layer" in v for v in violations(root))


def test_a_top_level_module_is_on_the_lowest_layer(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path, {"files.py": "from launchbench.scenario import model\n", "scenario/model.py": ""}
    )
    (found,) = violations(root)
    assert "launchbench.files (errors) imports launchbench.scenario.model (scenario)" in found


def test_the_api_sits_between_the_fleet_and_the_cli(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "api.py": "from launchbench.fleet import score\nfrom launchbench.report import console\n",
            "fleet/score.py": "",
            "report/console.py": "def f():\n    from launchbench import api\n",
            "cli/run.py": "from launchbench.api import run\n",
        },
    )
    (found,) = violations(root)
    assert "launchbench.report.console (report) imports launchbench.api (api), a higher layer" in found


@pytest.mark.parametrize(
    ("source", "allowed"),
    [
        ("def __getattr__(name):\n    from launchbench import api\n", True),
        (
            "def __getattr__(name):\n    import importlib\n    return importlib.import_module('launchbench.run')\n",
            True,
        ),
        (
            "from launchbench import api\n",
            False,
        ),  # at module level: every import of the package would load it
        ("def other():\n    from launchbench import api\n", False),
        ("def __getattr__(name):\n    from launchbench.report import console\n", False),
    ],
)
def test_only_the_package_getattr_re_exports_the_api(tmp_path: Path, source: str, allowed: bool) -> None:
    root = plant_package(tmp_path, {"api.py": "", "run/__init__.py": "", "report/console.py": ""})
    (root / "__init__.py").write_text(source)
    assert (violations(root) == []) is allowed


def test_the_runner_package_may_call_the_api_only_from_its_call(tmp_path: Path) -> None:
    call = "class P:\n    def __call__(self):\n        from launchbench.api import run\n"
    root = plant_package(
        tmp_path,
        {"api.py": "", "run/__init__.py": call, "run/runner.py": "def f():\n    import launchbench.api\n"},
    )
    (found,) = violations(root)
    assert found.startswith("launchbench/run/runner.py:2:")


def test_an_import_cycle_is_found(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "scenario/a.py": "from launchbench.scenario import b\n",
            "scenario/b.py": "from .c import thing\n",
            "scenario/c.py": "import launchbench.scenario.a\nthing = 1\n",
            "scenario/d.py": "from launchbench.scenario import a\n",  # into the loop, not on it
        },
    )
    assert cycles(import_graph(root)) == [
        ["launchbench.scenario.a", "launchbench.scenario.b", "launchbench.scenario.c"]
    ]


def test_a_cycle_through_a_package_init_is_found(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "run/__init__.py": "from launchbench.run.engine import start\n",
            "run/engine.py": "from launchbench.run import DEFAULTS\n",
        },
    )
    assert cycles(import_graph(root)) == [["launchbench.run", "launchbench.run.engine"]]


def test_lazy_and_type_checking_imports_make_no_cycle(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "scenario/a.py": "from launchbench.scenario import b\n",
            "scenario/b.py": "def f():\n    from launchbench.scenario import a\n",
            "scenario/c.py": "from launchbench.scenario import d\n",
            "scenario/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from launchbench.scenario import c\n",
            "scenario/e.py": "import typing\nif typing.TYPE_CHECKING:\n    import launchbench.scenario.a\n",
        },
    )
    assert cycles(import_graph(root)) == []
