"""Broker strings are data: strip terminal escape sequences and wrap them in ``Text`` so no markup is read.

A queue name like ``[bold red]x[/]\\x1b[31m`` must reach the screen as those characters, not as red text or a
cursor movement: Textual would parse markup in plain ``str`` cells, and a raw escape would reach the terminal.
"""

from __future__ import annotations

import re

from rich.text import Text

# CSI / OSC / other ESC sequences first, then any remaining C0/C1 control character but newline and tab.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAKS = re.compile(r"[\n\t\r]+")


def clean(value: object, *, one_line: bool = True) -> str:
    """``value`` as text with escape sequences removed and control characters dropped."""
    text = _CONTROLS.sub("", _ESCAPES.sub("", str(value)))
    return _LINE_BREAKS.sub(" ", text) if one_line else text


def literal(value: object, style: str = "", *, one_line: bool = True) -> Text:
    """A ``Text`` that shows ``value`` exactly (cleaned), whatever brackets it holds."""
    return Text(clean(value, one_line=one_line), style=style, no_wrap=one_line, end="")
