"""A table written as rich lays it out on a console that prints no styles (a CI log, a pipe, a
`--format table` file), without rich laying out each cell.

For a verdict table of thousands of rows rich measures every cell, then renders each one as styled text
and pads it to its column: most of `launchbench compare`'s time on two runs of 1,000 cases. On a console
that prints text only, a table whose columns all get their natural width (the widest line of each, the
padding and the borders within the console's width) is its cells' text justified in those widths between
the box's characters; `plain_rendered` writes that text directly. Where anything else could happen (a
console that prints styles, a column that must be narrowed, a cell that rich would read or measure
differently) it returns None and the caller lets rich lay the table out; tests/report/test_plain_table.py
checks the text against rich's over generated tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rich.align import VerticalAlignMethod
from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, JustifyMethod, OverflowMethod
from rich.emoji import Emoji
from rich.segment import Segment, Segments
from rich.table import Table

from launchbench.report.terminal import Rendered

PADDING = 1  # rich's default cell padding, each side
JUSTIFIED = ("left", "right")
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class ColumnSpec:
    """One column of a table, as rich's ``add_column`` takes it."""

    header: str  # rich markup
    justify: JustifyMethod = "left"
    overflow: OverflowMethod = "ellipsis"
    no_wrap: bool = True
    min_width: int | None = None


def rich_table(
    title: str, table_box: Box, columns: Sequence[ColumnSpec], rows: Iterable[Sequence[str]]
) -> Table:
    """The rich table whose text plain_rendered writes: ``rows`` of rich markup, one string per column."""
    table = Table(title=title, title_justify="left", box=table_box)
    for column in columns:
        table.add_column(
            column.header,
            justify=column.justify,
            overflow=column.overflow,
            no_wrap=column.no_wrap,
            min_width=column.min_width,
        )
    for row in rows:
        table.add_row(*row)
    return table


def plain_rendered(
    console: Console,
    title: str,
    table_box: Box,
    columns: Sequence[ColumnSpec],
    rows: Sequence[Sequence[str]],
) -> Rendered | None:
    """The table (``title`` in rich markup above it; ``rows``: each cell's text as printed, one string
    per column) as rich prints rich_table of it (each cell as terminal.literal markup) on ``console``, or None
    where only rich can say (see the module's docstring)."""
    if not columns or not _prints_text_only(console) or any(c.justify not in JUSTIFIED for c in columns):
        return None
    headers = [console.render_str(column.header, highlight=False).plain for column in columns]
    replaces_emoji = console.render_str(":fire:", highlight=False).plain != ":fire:"
    emoji: Callable[[str], str] = Emoji.replace if replaces_emoji else str
    if not all(_read_as_written(text, emoji) for text in (*headers, *(t for row in rows for t in row))):
        return None
    widths = _natural_widths(columns, headers, rows)
    table_width = sum(widths) + len(widths) + 1
    if table_width > console.options.max_width or min(widths) == 2 * PADDING:
        return None  # narrowed by rich, or a column of no width, whose cells rich renders as nothing
    box = table_box.substitute(console.options, safe=console.safe_box)
    segments = _title(console, title, table_width)
    for line in _box_lines(box, widths, columns, headers, rows):
        segments += (Segment(line), Segment.line())
    return Rendered(Segments(segments), not any("…" in segment.text for segment in segments))


def _prints_text_only(console: Console) -> bool:
    """Whether the console writes no style (so rich's output is its segments' text alone)."""
    return console.color_system is None and not console.record


def _read_as_written(text: str, emoji: Callable[[str], str]) -> bool:
    """Whether rich prints ``text`` (as terminal.literal markup) as written: no emoji code (``:name:``)
    that the console replaces (``emoji``: what it makes of them), and no control character but the
    newline (rich drops some, expands tabs and measures lines split at others)."""
    if _CONTROL.search(text):
        return False
    return ":" not in text or emoji(text) == text


def _natural_widths(
    columns: Sequence[ColumnSpec], headers: Sequence[str], rows: Sequence[Sequence[str]]
) -> list[int]:
    """Each column's width with its padding: its widest line (header included), at least min_width."""
    widths = []
    for index, (column, header) in enumerate(zip(columns, headers, strict=True)):
        texts = [header, *(row[index] for row in rows)]
        widest = max(cell_len(line) for text in set(texts) for line in text.split("\n"))
        if column.min_width is not None:
            widest = max(widest, column.min_width)
        widths.append(widest + 2 * PADDING)
    return widths


def _cell(text: str, width: int, justify: JustifyMethod) -> list[str]:
    """The cell's lines, each justified in ``width`` less the padding and padded on both sides."""
    inner = width - 2 * PADDING
    pad = " " * PADDING
    lines = []
    for line in text.split("\n"):
        if justify == "right":
            line = line.rstrip()  # rich strips a right-justified line's trailing space
            lines.append(f"{pad}{' ' * (inner - cell_len(line))}{line}{pad}")
        else:
            lines.append(f"{pad}{line}{' ' * (inner - cell_len(line))}{pad}")
    return lines


def _box_lines(
    box: Box,
    widths: list[int],
    columns: Sequence[ColumnSpec],
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
) -> list[str]:
    """The lines under the title: the top edge, the header, its rule, each row's lines, the bottom edge."""

    def cells(texts: Sequence[str]) -> list[list[str]]:
        return [_cell(text, w, c.justify) for text, w, c in zip(texts, widths, columns, strict=True)]

    head = (box.head_left, box.head_vertical, box.head_right)
    middle = (box.mid_left, box.mid_vertical, box.mid_right)
    last = (box.foot_left, box.foot_vertical, box.foot_right)
    lines = [box.get_top(widths), *_joined(cells(headers), widths, head, "bottom")]
    lines.append(box.get_row(widths, "head", edge=True))
    for index, row in enumerate(rows):
        lines += _joined(cells(row), widths, last if index == len(rows) - 1 else middle)
    lines.append(box.get_bottom(widths))
    return lines


def _joined(
    cells: list[list[str]],
    widths: list[int],
    edges: tuple[str, str, str],
    vertical: VerticalAlignMethod = "top",
) -> list[str]:
    """A row's lines: its cells side by side between the box's characters (left edge, divider, right
    edge), each cell as tall as the tallest, at its top (blank lines under it) or, as the header, at its
    bottom."""
    height = max(len(cell) for cell in cells)
    shaped = []
    for cell, width in zip(cells, widths, strict=True):
        blank = [" " * width] * (height - len(cell))
        shaped.append(blank + cell if vertical == "bottom" else cell + blank)
    left, divider, right = edges
    return [left + divider.join(parts) + right for parts in zip(*shaped, strict=True)]


def _title(console: Console, title: str, table_width: int) -> list[Segment]:
    """The title's lines as rich's table writes them: the markup rendered left-justified in the table's
    width (so padded to it, or wrapped where longer), each line followed by a line break."""
    if not title:
        return []
    options = console.options.update(width=table_width, highlight=False, height=None, justify="left")
    text = console.render_str(title, style="table.title", highlight=False)
    rendered = console.render(text, options)
    lines = Segment.split_and_crop_lines(
        rendered, console.options.max_width, pad=False, include_new_lines=False
    )
    return [segment for line in lines for segment in (*line, Segment.line())]
