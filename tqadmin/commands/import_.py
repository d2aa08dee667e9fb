"""``tqadmin import FILE QUEUE``: publish a JSONL file confirmed; a bad line stops it before sending."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.admin.importer import import_messages
from tqadmin.admin.jsonl import read_messages
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import finish


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="JSONL written by `tqadmin export`")
    parser.add_argument("queue", metavar="QUEUE", help="queue to publish to (must exist)")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "import")
    messages = read_messages(args.file)
    with ctx.admin() as admin:
        gate.check_admin(admin, "import", args.queue)
        outcome = import_messages(admin.open_transfer(args.queue), args.queue, messages, str(args.file))
    return finish(ctx, outcome)
