"""``tqadmin export QUEUE FILE``: every message to JSONL, bodies and headers preserved; nothing consumed."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.admin.scan import export
from tqadmin.commands.arguments import add_force
from tqadmin.commands.context import CommandContext


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", metavar="QUEUE", help="queue to read (messages stay, marked redelivered)")
    parser.add_argument("file", type=Path, metavar="FILE", help="JSONL file to write (a new file, 0600)")
    add_force(parser, "FILE")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    with ctx.admin() as admin:
        gate.check_admin(admin, "export")
        report = export(admin.open_transfer(args.queue), args.queue, args.file, force=args.force)
    ctx.progress(f"export: {report.moved} message(s) written to {args.file}")
    return ctx.finish(report)
