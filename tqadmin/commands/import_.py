"""``tqadmin import FILE QUEUE``: publish a JSONL file confirmed; a bad line stops it before sending."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqadmin.admin.importer import import_messages
from tqadmin.admin.jsonl import read_messages
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import finish
from tqadmin.plugin.capabilities import Operation


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="JSONL written by `tqadmin export`")
    parser.add_argument("queue", metavar="QUEUE", help="queue to publish to (must exist)")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    ctx.settings.require_writable("import")
    messages = read_messages(args.file)
    with ctx.admin() as admin:
        admin.capabilities.require(Operation.IMPORT)
        admin.require_writable("import", args.queue)
        outcome = import_messages(admin.open_transfer(args.queue), args.queue, messages, str(args.file))
    return finish(ctx, outcome)
