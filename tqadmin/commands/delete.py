"""`tqadmin delete`: not built yet."""

from __future__ import annotations

import argparse

from tqadmin.commands.context import CommandContext
from tqadmin.errors import NotSupported


def configure(parser: argparse.ArgumentParser) -> None:
    """No options yet."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    raise NotSupported("this command is not built yet")
