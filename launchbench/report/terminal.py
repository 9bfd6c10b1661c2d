"""The consoles every command prints to. On a terminal, tables fit its width. Anywhere else (CI logs,
pipes, files) the console is as wide as the widest line, so no cell is cut short: a log is read by
scrolling, not by a window's width. Text is printed as written: no emoji code in it (a case, a path or
a message holding ``:100:``) is replaced by an emoji. Imports rich only, so a command that prints a
table loads none of the run's analysis (pandas among it) to make its console."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import IO

from rich.console import Console, RenderableType
from rich.segment import Segment, Segments

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
        emoji=False,
    )


def literal(text: str) -> str:
    """Markup that prints ``text`` as it is, wherever it stands in a line of markup. rich's ``escape``
    misses two cases: a backslash before a ``[`` that starts no tag (rich's markup reads ``\\[`` as
    ``[``), and a trailing backslash, which it doubles so that a tag after it stays a tag, but which
    then prints doubled where no tag follows (``C:\\runs\\ → x``). Here every ``[`` is written as
    ``\\[``, and backslashes that end a piece are doubled and followed by an empty tag, so both
    print as written."""
    if "[" not in text and not text.endswith("\\"):
        return text
    return "\\[".join(map(_before_a_tag, text.split("[")))


def _before_a_tag(piece: str) -> str:
    """``piece`` (no ``[`` in it) as markup followed by a tag: its trailing backslashes doubled before an
    empty tag, where it has any."""
    body = piece.rstrip("\\")
    trailing = len(piece) - len(body)
    return body + "\\" * (2 * trailing) + "[none][/none]" if trailing else piece


def make_console(file: IO[str] | None = None, stream: Stream = Stream.STDOUT) -> Console:
    """The terminal's console when printing to one; otherwise a plain_console."""
    console = Console(
        file=file, stderr=stream is Stream.STDERR, highlight=False, soft_wrap=False, emoji=False
    )
    return console if console.is_terminal else plain_console(file, stream)


@dataclass(frozen=True)
class Rendered:
    """A renderable laid out once at a console's width: the segments to print (printing them lays
    nothing out again; for a table of 1,000 cases the layout is most of its time) and whether it fits
    with no cell cut short (a table narrows its columns to the width, and rich marks a cell it cut
    with an ellipsis)."""

    segments: Segments
    fits: bool


def rendered(console: Console, renderable: RenderableType) -> Rendered:
    """``renderable`` laid out by ``console`` at its width, as console.print would lay it out."""
    lines = console.render_lines(renderable, pad=False)  # cropped to the width: no line is longer
    fits = not any("…" in segment.text for line in lines for segment in line)
    return Rendered(Segments([segment for line in lines for segment in (*line, Segment.line())]), fits)
