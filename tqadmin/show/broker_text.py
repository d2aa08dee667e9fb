"""Strings from a broker are data: the one rule for showing them (queue names, headers, bodies, a registry's
entries, a framework's arguments), so that none can drive the terminal or be read as markup.

A character is safe to show when Python calls it printable; every other one (C0 and C1 controls, DEL, the
bidirectional overrides, line and paragraph separators, zero-width and other format characters) is not shown
as itself. Where the text is plain and may be copied (the commands' tables, reports, previews) it is shown as
its escape, as ``repr`` writes it (``\\x1b``, ``\\u202e``): :func:`escaped`. On the dashboard, whose cells are
narrow and read at a glance, a terminal escape sequence goes whole and the rest is dropped, line breaks and
tabs becoming one space on a one-line cell: :func:`stripped`. Both are linear in their input.
"""

from __future__ import annotations

import re

# CSI, OSC and other two-character ESC sequences: removed whole on the dashboard (their tails are printable).
_SEQUENCES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_KEPT_ON_MANY_LINES = "\n\t"
_LINE_BREAKS = re.compile(r"[\n\t]+")


def escaped(text: str) -> str:
    """``text`` with every unprintable character written as its escape (``\\x1b``, ``\\u202e``)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def stripped(text: str, *, one_line: bool = True) -> str:
    """``text`` without escape sequences and unprintable characters; newlines and tabs are kept on many
    lines and become one space on one."""
    if text.isprintable():
        return text
    if "\x1b" in text:
        text = _SEQUENCES.sub("", text)
    text = "".join(c for c in text if c.isprintable() or c in _KEPT_ON_MANY_LINES)
    return _LINE_BREAKS.sub(" ", text) if one_line else text
