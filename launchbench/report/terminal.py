"""The consoles every command prints to. On a terminal, tables fit its width. Anywhere else (CI logs,
pipes, files) the console is as wide as the widest line, so no cell is cut short: a log is read by
scrolling, not by a window's width. Imports rich only, so a command that prints a table loads none of
the run's analysis (pandas among it) to make its console."""

from __future__ import annotations

from enum import Enum
from typing import IO

from rich.console import Console

PLAIN_WIDTH = 4096  # columns of a console that is not a terminal: wider than any table it prints


class Stream(Enum):
    """The stream a console without a ``file`` prints to."""

    STDOUT = "stdout"
    STDERR = "stderr"


def plain_console(file: IO[str] | None = None, stream: Stream = Stream.STDOUT) -> Console:
    """A console with no colour and no width limit worth the name (for logs, pipes and files)."""
    return Console(
        file=file,
        stderr=stream is Stream.STDERR,
        width=PLAIN_WIDTH,
        color_system=None,
        highlight=False,
        soft_wrap=False,
    )


def make_console(file: IO[str] | None = None, stream: Stream = Stream.STDOUT) -> Console:
    """The terminal's console when printing to one; otherwise a plain_console."""
    console = Console(file=file, stderr=stream is Stream.STDERR, highlight=False, soft_wrap=False)
    return console if console.is_terminal else plain_console(file, stream)
