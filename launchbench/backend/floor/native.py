"""The native floor's C library (native.c): built at run time with the system's C compiler, loaded
through ctypes. Nothing here imports CuPy, so building and opening it is tested on any machine."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path

from launchbench.backend.floor.base import LayerUnavailable

SOURCE = Path(__file__).with_name("native.c")
DRIVER_LIBRARY = "libcuda.so.1"
ERROR_BYTES = 512
BUILD_TIMEOUT_S = 120.0


def c_compiler() -> str:
    """The C compiler: $CC, else ``cc`` on PATH."""
    compiler = os.environ.get("CC") or shutil.which("cc")
    if not compiler:
        raise LayerUnavailable("no C compiler: cc is not on PATH and CC is not set")
    return compiler


def build_library(workdir: Path, source: Path = SOURCE) -> Path:
    """Compile ``source`` into a shared library in ``workdir``; LayerUnavailable with the compiler's
    first error line where it cannot."""
    compiler = c_compiler()
    target = workdir / "launchbench_floor.so"
    command = [compiler, "-O2", "-shared", "-fPIC", "-o", str(target), str(source), "-ldl"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LayerUnavailable(f"{compiler} could not build {source}: {exc}") from exc
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if "error" in line] or done.stderr.splitlines()
        raise LayerUnavailable(
            f"{compiler} could not build {source}: {lines[0] if lines else done.returncode}"
        )
    return target


def _declare(lib: ctypes.CDLL) -> None:
    p, c, n, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_int
    signatures = {
        "lbf_open": [c, c, i],
        "lbf_load": [c, c, ctypes.POINTER(p), c, i],
        "lbf_eager": [p, p, p, n, n, c, i],
        "lbf_graph_make": [p, p, p, i, ctypes.POINTER(p), c, i],
        "lbf_graph": [p, p, n, n, c, i],
        "lbf_graph_free": [p],
    }
    for name, argtypes in signatures.items():
        function = getattr(lib, name)
        function.argtypes = argtypes
        function.restype = i


class NativeLibrary:
    """The built library, with the driver library opened (LayerUnavailable, one line, where it cannot)."""

    def __init__(self, path: Path, driver: str = DRIVER_LIBRARY):
        self.lib = ctypes.CDLL(str(path))
        _declare(self.lib)
        self._error = ctypes.create_string_buffer(ERROR_BYTES)
        if self.lib.lbf_open(driver.encode(), self._error, ERROR_BYTES) != 0:
            raise LayerUnavailable(self._error.value.decode(errors="replace"))

    def _check(self, status: int) -> None:
        if status != 0:
            raise LayerUnavailable(self._error.value.decode(errors="replace"))

    def function(self, ptx: bytes, name: str) -> int:
        """The kernel ``name`` of ``ptx``, loaded into the calling thread's context."""
        handle = ctypes.c_void_p()
        self._check(self.lib.lbf_load(ptx, name.encode(), ctypes.byref(handle), self._error, ERROR_BYTES))
        return int(handle.value or 0)

    def graph(self, function: int, stream: int, params: int | None, nodes: int) -> int:
        """An executable graph of ``nodes`` launches of ``function``, captured on ``stream``."""
        handle = ctypes.c_void_p()
        self._check(
            self.lib.lbf_graph_make(
                function, stream, params, nodes, ctypes.byref(handle), self._error, ERROR_BYTES
            )
        )
        return int(handle.value or 0)

    def free_graph(self, graph: int) -> None:
        self.lib.lbf_graph_free(graph)

    def launch(self, function: int, stream: int, params: int | None, launches: int, block: int) -> None:
        self._check(self.lib.lbf_eager(function, stream, params, launches, block, self._error, ERROR_BYTES))

    def replay(self, graph: int, stream: int, launches: int, block: int) -> None:
        self._check(self.lib.lbf_graph(graph, stream, launches, block, self._error, ERROR_BYTES))


def kernel_params(pointer: int, count: int) -> tuple[int | None, object]:
    """A ``void**`` array of ``count`` entries, each pointing at a slot that holds ``pointer``: the
    address (None for no arguments) and the ctypes objects that must outlive its use."""
    if count == 0:
        return None, ()
    slots = (ctypes.c_void_p * count)(*([pointer] * count))
    size = ctypes.sizeof(ctypes.c_void_p)
    array = (ctypes.c_void_p * count)(*[ctypes.addressof(slots) + k * size for k in range(count)])
    return ctypes.addressof(array), (slots, array)
