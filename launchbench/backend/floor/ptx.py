"""The empty kernels as PTX, made by NVRTC: through cuda-bindings where it is installed, else through
CuPy's own NVRTC binding."""

from __future__ import annotations

from typing import Any

from launchbench.backend.floor.base import LayerUnavailable


def _check(result: tuple[Any, ...], what: str) -> tuple[Any, ...]:
    from cuda.bindings import nvrtc

    if result[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise LayerUnavailable(f"NVRTC {what} failed: {result[0]}")
    return result


def _with_bindings(source: str, arch: str) -> bytes:
    from cuda.bindings import nvrtc

    _, program = _check(nvrtc.nvrtcCreateProgram(source.encode(), b"floor.cu", 0, [], []), "create")
    options = [f"--gpu-architecture=compute_{arch}".encode()]
    try:
        _check(nvrtc.nvrtcCompileProgram(program, len(options), options), "compile")
        _, size = _check(nvrtc.nvrtcGetPTXSize(program), "PTX size")
        buffer = b" " * size
        _check(nvrtc.nvrtcGetPTX(program, buffer), "PTX")
    finally:
        nvrtc.nvrtcDestroyProgram(program)
    return buffer.rstrip(b"\0 ") + b"\0"


def _with_cupy(source: str, arch: str) -> bytes:
    from cupy.cuda import nvrtc

    program = nvrtc.createProgram(source, "floor.cu", [], [])
    try:
        nvrtc.compileProgram(program, [f"--gpu-architecture=compute_{arch}"])
        ptx = nvrtc.getPTX(program)
    finally:
        nvrtc.destroyProgram(program)
    text = ptx if isinstance(ptx, bytes) else str(ptx).encode()
    return text.rstrip(b"\0") + b"\0"


def compile_ptx(source: str, arch: str) -> bytes:
    """PTX of ``source`` for compute capability ``arch`` ("90"), NUL-terminated for cuModuleLoadData."""
    try:
        return _with_bindings(source, arch)
    except Exception as bindings_error:  # noqa: BLE001 - no cuda-bindings, or its NVRTC missing: try CuPy's
        try:
            return _with_cupy(source, arch)
        except Exception as cupy_error:  # noqa: BLE001 - neither NVRTC works: the C layer is skipped
            raise LayerUnavailable(
                f"no NVRTC to make the kernels' PTX (cuda-bindings: {bindings_error}; CuPy: {cupy_error})"
            ) from cupy_error
