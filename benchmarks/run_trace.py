"""When each step of a ``launchbench run`` happens, from the interpreter's start to its exit: runs the
command in this process with its steps wrapped to note the seconds since the start (the fork server's
start, the planning, the console's imports, the first worker's start, the run directory, each case-pass
and pass end, the finish, the summary, the interpreter's exit handlers; on older trees that had it, the
fit library's early import). A step the traced tree lacks is left out.

    python benchmarks/run_trace.py OUT.tsv run scenarios/quickstart.yaml [options...]

OUT.tsv gets one line per event (seconds, event); the last is ``atexit`` (the exit handlers after
multiprocessing's, as the interpreter shuts down). The seconds count from this interpreter's start
(``time.perf_counter`` at the top of this file, after Python itself has started).
"""

from __future__ import annotations

import time

BEGIN = time.perf_counter()

import atexit  # noqa: E402 - the start above is taken before any other import
import functools  # noqa: E402
import importlib.abc  # noqa: E402
import importlib.machinery  # noqa: E402
import sys  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

EVENTS: list[tuple[float, str]] = []


def note(event: str) -> None:
    EVENTS.append((time.perf_counter() - BEGIN, event))


def wrap(owner: Any, name: str, label: str | None = None) -> None:
    """Note ``owner.name``'s every call and return."""
    original: Callable[..., Any] | None = getattr(owner, name, None)
    if original is None:  # an older tree without this step
        return
    shown = label or name

    @functools.wraps(original)
    def traced(*args: Any, **kwargs: Any) -> Any:
        note(f"{shown} >")
        try:
            return original(*args, **kwargs)
        finally:
            note(f"{shown} <")

    setattr(owner, name, traced)


# module: [(owner attribute path, label)], wrapped as the module is first imported (so the command's
# imports happen where the command makes them)
TARGETS: dict[str, list[tuple[str, str]]] = {
    "launchbench.run.worker_start": [("worker_context", "worker_context")],
    "launchbench.cli.run": [(n, n) for n in ("_run", "_planned", "_options", "_measured", "_outcome")],
    "launchbench.report.terminal": [("make_console", "make_console")],
    "launchbench.run.runner": [("run", "runner.run"), ("start_fit_library_import", "fit_import_start")],
    "launchbench.run.early_imports": [("_import_quietly", "fit_library_import")],
    "launchbench.run.executor": [
        ("WorkerExecutor.spawn_first", "spawn_first"),
        ("WorkerExecutor.start", "executor.start"),
        ("WorkerExecutor.execute", "execute"),
        ("WorkerExecutor.next_pass", "next_pass"),
        ("WorkerExecutor.close", "executor.close"),
    ],
    "launchbench.run.session": [
        ("RunSession.__init__", "session.init"),
        ("RunSession.pass_ended", "pass_ended"),
        ("RunSession.finish", "finish"),
    ],
}


class _Tracer(importlib.abc.MetaPathFinder):
    """Wraps a target module's steps once it has been executed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in TARGETS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: Any) -> None:
            note(f"import {name} >")
            execute(module)
            note(f"import {name} <")
            for attribute, label in TARGETS[name]:
                *owners, last = attribute.split(".")
                owner = module
                for part in owners:
                    owner = getattr(owner, part)
                wrap(owner, last, label)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def install() -> None:
    sys.meta_path.insert(0, _Tracer())


def write(out: Path) -> None:
    heavy = ("cupy", "sklearn", "scipy.stats", "pandas", "matplotlib", "rich")
    note("atexit; imported: " + " ".join(name for name in heavy if name in sys.modules))
    out.write_text("".join(f"{t:.4f}\t{event}\n" for t, event in EVENTS))


def main() -> None:
    out = Path(sys.argv[1])
    atexit.register(write, out)  # registered before multiprocessing's: runs after them
    install()
    from launchbench.cli import main as cli_main

    sys.argv = ["launchbench", *sys.argv[2:]]
    try:
        cli_main()
    finally:
        note("main returned")


if __name__ == "__main__":
    main()
