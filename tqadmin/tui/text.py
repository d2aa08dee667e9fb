"""Broker strings are data: shown through the one rule of :mod:`tqadmin.show.broker_text` and wrapped in
``Text`` so no markup is read.

A queue name like ``[bold red]x[/]\\x1b[31m`` must reach the screen as those characters, not as red text or a
cursor movement: Textual would parse markup in plain ``str`` cells, and a raw escape would reach the terminal.
"""

from __future__ import annotations

from rich.text import Text

from tqadmin.show.broker_text import stripped


def clean(value: object, *, one_line: bool = True) -> str:
    """``value`` as text without escape sequences and unprintable characters
    (:func:`~tqadmin.show.broker_text.stripped`)."""
    return stripped(str(value), one_line=one_line)


def literal(value: object, style: str = "", *, one_line: bool = True) -> Text:
    """A ``Text`` that shows ``value`` exactly (cleaned), whatever brackets it holds."""
    return Text(clean(value, one_line=one_line), style=style, no_wrap=one_line, end="")
