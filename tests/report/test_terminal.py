"""report.terminal.rendered: a table laid out once prints what console.print prints, and says whether it fits."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table

from launchbench.report.terminal import make_console, rendered


def table_of(cell: str) -> Table:
    table = Table(title="title")
    table.add_column("case", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_row(cell, "[bold red]+12.5% slower[/]")
    table.add_row("b", "1.0")
    return table


def console(width: int, colour: bool) -> Console:
    return Console(
        file=io.StringIO(),
        width=width,
        color_system="truecolor" if colour else None,
        force_terminal=colour,
        soft_wrap=False,
    )


@pytest.mark.parametrize("colour", [False, True])
@pytest.mark.parametrize("width", [12, 30, 200])
def test_the_segments_print_as_the_table_prints(width: int, colour: bool) -> None:
    direct, once = console(width, colour), console(width, colour)
    direct.print(table_of("a-case-name"))
    once.print(rendered(once, table_of("a-case-name")).segments)
    assert once.file.getvalue() == direct.file.getvalue()  # type: ignore[attr-defined]


def test_fits_until_a_cell_is_cut() -> None:
    assert rendered(console(200, False), table_of("a-case-name")).fits
    narrow = rendered(console(20, False), table_of("a-case-name"))
    assert not narrow.fits
    text = "".join(segment.text for segment in narrow.segments.segments)
    assert "…" in text  # rich cut a cell to fit: that is what `fits` reads


@pytest.mark.parametrize("terminal", [False, True])
def test_text_prints_as_written_with_no_emoji_code_replaced(
    terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A case, a path or a message holding ``:100:`` or ``:b:`` prints as it is, on a terminal (rich's
    FORCE_COLOR makes the file one) and anywhere else; rich's default would print 💯 and 🅱."""
    if terminal:
        monkeypatch.setenv("FORCE_COLOR", "1")
    file = io.StringIO()
    console = make_console(file)
    assert console.is_terminal is terminal
    console.print("x:100:y a:b:c")
    console.print(table_of("case:100:"))
    printed = file.getvalue()
    assert "x:100:y a:b:c" in printed and "case:100:" in printed
    assert "💯" not in printed and "🅱" not in printed
