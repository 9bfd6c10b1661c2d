"""The shape of launchbench's functions: none over 60 lines, no boolean flag parameters outside the CLI.

Length: a function's lines from its ``def`` to its last line, docstring, comments and blank lines
included (what a reader scrolls through), at most MAX_LINES. A line bound rather than ruff's PLR0915
(statements) or C901 (branches): the project's rule is written in lines, and a function can stay under 50
statements or 10 branches while running past two screens (long literal tables, long calls).
Nested functions count on their own, and inside the function that holds them.

Flag parameters: a parameter annotated ``bool`` with a default, in any function of ``launchbench/``
outside ``launchbench/cli/`` (click options arrive as booleans there). An enum or a strategy says more
than ``paired=True``. Overrides whose signature a library fixes are EXEMPT.

Today's offenders are listed in LONG and FLAGS: they may only shrink. The tests fail on a function or
a flag not listed, on a listed function that grew, and on a listed one that is fixed or gone (so the
lists stay true; remove its line).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from builders import plant_package

PACKAGE = Path(__file__).resolve().parent.parent / "launchbench"
MAX_LINES = 60

# "module:qualified name" → its length in lines today (may only go down, to at most MAX_LINES: then remove it)
LONG: dict[str, int] = {}

# "module:qualified name:parameter" of today's boolean flags (remove a line once its flag is gone)
FLAGS: frozenset[str] = frozenset(
    {
        "launchbench.api:run:isolate",
        "launchbench.api:run:quick",
        "launchbench.results.schema:ModeResult.pooled:target_met",
    }
)

# signatures a library fixes: PyYAML's BaseConstructor.construct_object(node, deep=False)
EXEMPT: frozenset[str] = frozenset({"launchbench.scenario.yaml_safe:_Loader.construct_object:deep"})


@dataclass(frozen=True)
class Function:
    name: str  # "module:qualified name"
    lines: int
    flags: tuple[str, ...]  # parameters annotated bool with a default


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _flags(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = [*zip(positional, defaults), *zip(args.kwonlyargs, args.kw_defaults)]
    return tuple(
        arg.arg
        for arg, default in pairs
        if default is not None and arg.annotation is not None and ast.unparse(arg.annotation) == "bool"
    )


def _walk(node: ast.AST, module: str, prefix: str) -> Iterator[Function]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + child.name
            assert child.end_lineno is not None
            yield Function(f"{module}:{name}", child.end_lineno - child.lineno + 1, _flags(child))
            yield from _walk(child, module, name + ".")
        elif isinstance(child, ast.ClassDef):
            yield from _walk(child, module, prefix + child.name + ".")
        else:
            yield from _walk(child, module, prefix)


def functions(root: Path) -> list[Function]:
    """Every function and method of the package at ``root``, nested ones included."""
    found: list[Function] = []
    for path in sorted(root.rglob("*.py")):
        found.extend(_functions_of(path.read_text(), _module(path, root)))
    return found


@functools.cache
def _functions_of(source: str, module: str) -> tuple[Function, ...]:
    """The functions of one module's source: found once per text (three tests read the package)."""
    return tuple(_walk(ast.parse(source), module, ""))


def long_function_problems(found: list[Function], allowed: dict[str, int]) -> list[str]:
    lines = {f.name: f.lines for f in found}
    problems = [
        f"{f.name} is {f.lines} lines (at most {MAX_LINES})"
        for f in found
        if f.lines > MAX_LINES and f.name not in allowed
    ]
    for name, bound in sorted(allowed.items()):
        if name not in lines:
            problems.append(f"{name} is listed in LONG but gone: remove its line")
        elif lines[name] > bound:
            problems.append(f"{name} grew to {lines[name]} lines (listed at {bound}; shrink it)")
        elif lines[name] <= MAX_LINES:
            problems.append(f"{name} is {lines[name]} lines now: remove its line from LONG")
    return problems


def flag_problems(found: list[Function], allowed: frozenset[str], exempt: frozenset[str]) -> list[str]:
    present = {
        f"{f.name}:{flag}"
        for f in found
        if not f.name.startswith(("launchbench.cli.", "launchbench.cli:"))
        for flag in f.flags
    }
    problems = [
        f"{flag.rpartition(':')[0]} takes the boolean flag {flag.rpartition(':')[2]!r}: an enum or a "
        "strategy says more"
        for flag in sorted(present - allowed - exempt)
    ]
    problems += [f"{flag} is listed in FLAGS but gone: remove its line" for flag in sorted(allowed - present)]
    return problems


def test_no_function_is_over_60_lines() -> None:
    assert long_function_problems(functions(PACKAGE), LONG) == []


def test_no_boolean_flag_parameters_outside_the_cli() -> None:
    assert flag_problems(functions(PACKAGE), FLAGS, EXEMPT) == []


def test_the_exemptions_are_still_there() -> None:
    present = {f"{f.name}:{flag}" for f in functions(PACKAGE) for flag in f.flags}
    assert present >= EXEMPT


# ------------------------------------------------------------------------------------ the checkers themselves


def _body(lines: int) -> str:
    return "".join("    x = 1\n" for _ in range(lines - 1))


def test_a_long_function_and_method_are_found(tmp_path: Path) -> None:
    source = (
        f"def short():\n{_body(60)}\n\nclass C:\n    def long(self):\n{_body(61).replace('    ', '        ')}"
    )
    root = plant_package(tmp_path, {"run/engine.py": source})
    assert long_function_problems(functions(root), {}) == [
        f"launchbench.run.engine:C.long is 61 lines (at most {MAX_LINES})"
    ]


def test_a_listed_function_may_only_shrink(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path, {"run/engine.py": f"def grown():\n{_body(80)}\ndef shrunk():\n{_body(70)}"}
    )
    found = functions(root)
    allowed = {"launchbench.run.engine:grown": 79, "launchbench.run.engine:shrunk": 75}
    assert long_function_problems(found, allowed) == [
        "launchbench.run.engine:grown grew to 80 lines (listed at 79; shrink it)"
    ]


def test_a_fixed_or_gone_function_must_leave_the_list(tmp_path: Path) -> None:
    root = plant_package(tmp_path, {"run/engine.py": f"def fixed():\n{_body(60)}"})
    allowed = {"launchbench.run.engine:fixed": 75, "launchbench.run.engine:gone": 90}
    assert long_function_problems(functions(root), allowed) == [
        "launchbench.run.engine:fixed is 60 lines now: remove its line from LONG",
        "launchbench.run.engine:gone is listed in LONG but gone: remove its line",
    ]


def test_flag_parameters_are_found_outside_the_cli(tmp_path: Path) -> None:
    root = plant_package(
        tmp_path,
        {
            "analysis/compare.py": (
                "def a(x, paired: bool = False, *, b: bool = True, c: bool, d: int = 0, e=True): pass\n"
                "class K:\n    def m(self, quiet: bool = False):\n        def inner(y: bool = True): pass\n"
            ),
            "cli/run.py": "def run(quick: bool = False): pass\n",
            "files.py": "def check(create: bool = False): pass\n",
        },
    )
    message = "takes the boolean flag {!r}: an enum or a strategy says more"
    assert flag_problems(functions(root), frozenset({"launchbench.files:check:create"}), frozenset()) == [
        f"launchbench.analysis.compare:K.m.inner {message.format('y')}",
        f"launchbench.analysis.compare:K.m {message.format('quiet')}",
        f"launchbench.analysis.compare:a {message.format('b')}",
        f"launchbench.analysis.compare:a {message.format('paired')}",
    ]


def test_a_fixed_flag_must_leave_the_list(tmp_path: Path) -> None:
    root = plant_package(tmp_path, {"files.py": "def check(create: int = 0): pass\n"})
    assert flag_problems(functions(root), frozenset({"launchbench.files:check:create"}), frozenset()) == [
        "launchbench.files:check:create is listed in FLAGS but gone: remove its line"
    ]
