"""plain_table writes a table as rich prints it on a console that prints text only: the same text as
rich's Table over generated tables (cells of several lines, wide and combining characters, emoji codes,
markup characters, control characters, titles that wrap, both boxes, narrow consoles, an ASCII-only
console), or None where it cannot be sure; and `compare`'s verdict table takes it on a plain console."""

from __future__ import annotations

from io import StringIO

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from launchbench.analysis.compare import CompareSettings, Comparison, compare_runs
from launchbench.report import compare_console
from launchbench.report.plain_table import ColumnSpec, plain_rendered, rich_table
from launchbench.report.terminal import Rendered, literal, plain_console, rendered
from tests.builders import make_run

ORDINARY = [
    "a",
    "bc",
    "1.5%",
    " ",
    "  ",
    "\n",
    "中",
    "é",
    "e\u0301",
    "…",
    ":",
    "fire",
    "[b]",
    "🔥",
    "→",
    "\\",
    "[",
]
ODD = [":fire:", "\t", "\r", "\u2028"]  # read or measured differently by rich: left to it
texts = st.lists(st.sampled_from(ORDINARY * 8 + ODD), max_size=6).map("".join)
columns = st.builds(
    ColumnSpec,
    header=texts.map(escape),
    justify=st.sampled_from(["left", "right"]),
    overflow=st.sampled_from(["ellipsis", "fold"]),
    no_wrap=st.booleans(),
    min_width=st.one_of(st.none(), st.integers(0, 12)),
)


class AsciiFile(StringIO):
    """A file whose encoding cannot write box characters (rich draws the ASCII box instead)."""

    encoding = "ascii"


def console_of(width: int, ascii_only: bool, emoji: bool = False) -> Console:
    """A console that prints text only, as plain_console, of ``width`` columns (``emoji``: one that
    replaces emoji codes, as rich's consoles do by default)."""
    file = AsciiFile() if ascii_only else StringIO()
    return Console(file=file, width=width, color_system=None, highlight=False, soft_wrap=False, emoji=emoji)


def printed(console: Console, laid_out: Rendered) -> str:
    console.print(laid_out.segments)
    file = console.file
    assert isinstance(file, StringIO)
    return file.getvalue()


def literal_table(title: str, table_box: box.Box, specs: list[ColumnSpec], rows: list[list[str]]) -> Table:
    return rich_table(title, table_box, specs, ([literal(text) for text in row] for row in rows))


@settings(max_examples=150, deadline=None)
@given(
    title=texts.map(escape),
    table_box=st.sampled_from([box.ROUNDED, box.SIMPLE_HEAD]),
    specs=st.lists(columns, min_size=1, max_size=4),
    data=st.data(),
    width=st.sampled_from([4096, 40, 12]),
    ascii_only=st.booleans(),
    emoji=st.booleans(),
)
def test_the_text_is_what_rich_prints_or_none(
    title: str,
    table_box: box.Box,
    specs: list[ColumnSpec],
    data: st.DataObject,
    width: int,
    ascii_only: bool,
    emoji: bool,
) -> None:
    rows = data.draw(st.lists(st.lists(texts, min_size=len(specs), max_size=len(specs)), max_size=4))
    fast = plain_rendered(console_of(width, ascii_only, emoji), title, table_box, specs, rows)
    if fast is None:
        return
    reference = rendered(console_of(width, ascii_only, emoji), literal_table(title, table_box, specs, rows))
    assert printed(console_of(width, ascii_only, emoji), fast) == printed(
        console_of(width, ascii_only, emoji), reference
    )
    assert fast.fits == reference.fits


def test_plain_text_that_fits_is_written_directly_and_anything_else_is_left_to_rich() -> None:
    specs = [ColumnSpec("case"), ColumnSpec("wall µs/launch", justify="right")]
    rows = [["quickstart/empty/length=1", "+1.0% same"], ["quickstart/scale/length=10", "-12.5%\nfaster"]]
    fitted = plain_rendered(console_of(80, False), "a → b", box.ROUNDED, specs, rows)
    assert fitted is not None and fitted.fits
    reference = rendered(console_of(80, False), literal_table("a → b", box.ROUNDED, specs, rows))
    assert printed(console_of(80, False), fitted) == printed(console_of(80, False), reference)
    assert plain_rendered(console_of(30, False), "a → b", box.ROUNDED, specs, rows) is None  # narrowed
    coloured = Console(file=StringIO(), color_system="truecolor", width=4096)
    assert plain_rendered(coloured, "a → b", box.ROUNDED, specs, rows) is None
    for odd in ("tab\there", "line\u2028break"):
        assert plain_rendered(console_of(80, False), "", box.ROUNDED, specs, [[odd, "x"]]) is None
    code = [["x:100:y", "1"]]  # an emoji code: written as it is where the console prints codes as they are
    assert plain_rendered(console_of(80, False, emoji=True), "", box.ROUNDED, specs, code) is None
    written = plain_rendered(plain_console(StringIO()), "", box.ROUNDED, specs, code)
    assert written is not None and "x:100:y" in printed(plain_console(StringIO()), written)


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    return compare_runs(make_run(), make_run(seed=1), CompareSettings())


@pytest.mark.parametrize("width", [4096, 100])
def test_a_comparisons_verdict_table_prints_as_rich_lays_it_out(
    comparison: Comparison, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole comparison on a plain console, once as `compare` prints it and once with rich laying
    out every table (plain_rendered answering None): the same text, on a console wider than the widest
    layout (whose table is written directly) and on one that takes a narrower layout."""
    direct = console_of(width, False)
    compare_console.render_comparison(direct, comparison, None)
    if width == 4096:  # the widest layout fits: its table is written directly
        table = compare_console.verdict_table(
            comparison, None, compare_console.LAYOUTS[0], compare_console.row_lines(comparison, None)
        )
        texts = [[cell.text for cell in cells] for cells in table.rows]
        assert plain_rendered(direct, table.title, table.box, table.columns, texts) is not None
    monkeypatch.setattr(compare_console, "plain_rendered", lambda *args: None)
    by_rich = console_of(width, False)
    compare_console.render_comparison(by_rich, comparison, None)
    assert isinstance(direct.file, StringIO) and isinstance(by_rich.file, StringIO)
    assert direct.file.getvalue() == by_rich.file.getvalue()
