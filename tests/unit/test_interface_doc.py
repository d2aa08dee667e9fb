"""docs/interface.md is the public reference: every command and option the parser knows is written there.

The parser is walked as ``tqadmin.cli`` builds it, with every command's options and every installed plugin's
flags, so a new option fails here until it is documented. A command is documented by its row in the table
of commands (the first cell names ``tqadmin COMMAND``), each of its options in that row; a global option
(a plugin's flag included) in the paragraph on global options.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tqadmin.cli import build_parser

DOC = (Path(__file__).resolve().parents[2] / "docs" / "interface.md").read_text()
PARSER = build_parser()
COMMANDS: dict[str, argparse.ArgumentParser] = next(
    a.choices for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)
)
HELP = {"-h", "--help"}
GLOBAL = {s for a in PARSER._actions for s in a.option_strings} - HELP


def option_strings(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings} - HELP


def mentions(text: str, word: str) -> bool:
    """``word`` in ``text`` as a word of its own (``--to`` is not found in ``--topology``)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def command_rows(command: str) -> str:
    """The rows of the table of commands whose first cell names ``tqadmin COMMAND``."""
    rows = [line for line in DOC.splitlines() if line.startswith("| `tqadmin")]
    return "\n".join(row for row in rows if mentions(row.split("|")[1], f"tqadmin {command}"))


def global_options_paragraph() -> str:
    start = DOC.index("Global options on every command")
    return DOC[start : DOC.index("\n- ", start)]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_has_a_row_naming_each_of_its_options(command: str) -> None:
    row = command_rows(command)
    assert row, f"docs/interface.md has no row for `tqadmin {command}` in its table of commands"
    missing = sorted(o for o in option_strings(COMMANDS[command]) - GLOBAL if not mentions(row, o))
    assert missing == [], (
        f"`tqadmin {command}`: options the parser knows that docs/interface.md does not name"
    )


def test_every_global_option_is_in_the_paragraph_on_global_options() -> None:
    paragraph = global_options_paragraph()
    assert sorted(o for o in GLOBAL if not mentions(paragraph, o)) == []


def test_every_command_accepts_the_global_options() -> None:
    """What the paragraph promises: global options after the command name too."""
    assert [name for name, parser in COMMANDS.items() if not option_strings(parser) >= GLOBAL] == []
