"""report.terminal: a table laid out once prints what console.print prints, and says whether it fits; text
is printed as written (no emoji code replaced; ``literal`` markup prints its text wherever it stands)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from launchbench.report.console import ConsoleEvents, print_summary
from launchbench.report.terminal import literal, make_console, plain_console, rendered
from tests.builders import make_run


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


# Text that rich's markup reads specially: backslashes, tags and half tags, closing tags.
MARKUP_LIKE = st.lists(
    st.sampled_from(["\\", "[", "]", "/", "b", "red", ":", " ", "x", "é"]), max_size=12
).map("".join)


@given(text=MARKUP_LIKE)
def test_literal_markup_reads_as_its_text_wherever_it_stands(text: str) -> None:
    """Alone, before a tag, inside one and before plain text: what a case id, a path or an error message
    meets in the lines the commands print."""
    for markup, expected in (
        (literal(text), text),
        (f"{literal(text)}[bold]!{literal(text)}[/]", f"{text}!{text}"),
        (f"[red]{literal(text)}[/] → {literal(text)} → y", f"{text} → {text} → y"),
    ):
        assert Text.from_markup(markup, emoji=False).plain == expected


def test_rich_escape_alone_prints_a_trailing_backslash_twice() -> None:
    """Why literal exists: with rich's escape, a path ending in a backslash prints doubled where no tag
    follows it (if this starts to hold, rich changed and literal could be its escape again)."""
    assert Text.from_markup(escape("C:\\runs\\") + " → y", emoji=False).plain == "C:\\runs\\\\ → y"
    assert Text.from_markup(literal("C:\\runs\\") + " → y", emoji=False).plain == "C:\\runs\\ → y"


def test_a_runs_lines_print_paths_cases_and_errors_as_they_are() -> None:
    """A run directory with brackets, a case id with a tag in it and an error message holding a closing
    tag print as they are: the markup neither drops them nor fails on them."""
    run = make_run()
    error = "shape [/x] of [bold] does not fit C:\\tmp\\"
    failed = run.cases[0].model_copy(update={"case_id": "empty/[red]n=1", "error": error})
    run = run.model_copy(update={"cases": [failed, *run.cases[1:]]})
    file = io.StringIO()
    console = plain_console(file)
    run_dir = Path("runs/[nightly]/a\\")
    events = ConsoleEvents(console)
    events.run_started(run_dir, [], {})
    events.case_finished(failed)
    print_summary(console, run, run_dir)
    printed = file.getvalue()
    assert f"→ {run_dir}\n" in printed
    assert f"✗ quickstart empty/[red]n=1: {error}\n" in printed
    assert "case(s) failed: empty/[red]n=1\n" in printed
    assert f"results: {run_dir / 'results.csv'} and results.json" in printed
