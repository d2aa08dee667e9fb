"""Broker strings are data: one rule shows them, escaped in plain text and stripped on the dashboard."""

from __future__ import annotations

import pytest

from tqadmin.show.broker_text import escaped, stripped

HOSTILE = "[bold red]x[/]\x1b[31m\x1b]0;title\x07\x00\u202eend\r\n\tmore"


def test_plain_text_shows_each_unprintable_character_as_its_escape() -> None:
    assert escaped(HOSTILE) == "[bold red]x[/]\\x1b[31m\\x1b]0;title\\x07\\x00\\u202eend\\r\\n\\tmore"
    assert escaped("café ok") == "café ok"


@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x85", "\xa0", "\u2028", "\u202e", "\U000e0001"])
def test_plain_text_escapes_a_character_as_repr_writes_it(char: str) -> None:
    assert escaped(f"a{char}b") == f"a{repr(char)[1:-1]}b"


def test_the_dashboard_drops_sequences_whole_and_every_other_unprintable_character() -> None:
    assert stripped(HOSTILE) == "[bold red]x[/]end more"
    assert stripped(HOSTILE, one_line=False) == "[bold red]x[/]end\n\tmore"
    assert stripped("a\u202eb\u200bc") == "abc"  # a bidirectional override reorders nothing on screen
    assert stripped("café ok") == "café ok"


def test_an_unterminated_sequence_runs_to_the_end_of_the_text() -> None:
    long = "\x1b]" + "a" * 200_000
    assert stripped(long) == ""
    assert escaped(long) == "\\x1b]" + "a" * 200_000
