"""The tool's own error types. The CLI maps them to exit codes; nothing else exits."""

from __future__ import annotations


class LaunchbenchError(Exception):
    """An error the user can act on; its message is shown without a traceback (exit code 2)."""


class ScenarioError(LaunchbenchError):
    """A scenario file that cannot be loaded: the message names the file, line and key path."""

    def __init__(self, file: str, message: str, line: int | None = None, key_path: str | None = None):
        self.file = file
        self.line = line
        self.key_path = key_path
        self.detail = message
        where = file if line is None else f"{file}:{line}"
        key = f" at '{key_path}'" if key_path else ""
        super().__init__(f"{where}{key}: {message}")


class ResultsFileError(LaunchbenchError):
    """A results file that is missing, truncated, corrupt, of another tool or of a newer schema."""


class NoGpuError(LaunchbenchError):
    """No usable GPU: CuPy missing, or no CUDA device visible."""
