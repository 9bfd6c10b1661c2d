"""Text on its way to a terminal, a table or a step summary: control and format characters found, and
written as escapes. Loads nothing (the history's trend and list commands use it)."""

from __future__ import annotations

import unicodedata

_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})  # controls, format marks (U+202E), line/paragraph separators


def control_characters(text: str) -> list[str]:
    """The control and format characters of ``text`` (newlines, escapes, U+202E ...), as U+XXXX."""
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) in _HIDDEN]


def visible(text: str) -> str:
    """``text`` with each control and format character written as its escape (\\n, \\u202e): what may
    reach a terminal or a step summary from a source the readers did not check."""
    if not control_characters(text):
        return text
    return "".join(
        c.encode("unicode_escape").decode("ascii") if unicodedata.category(c) in _HIDDEN else c for c in text
    )
