"""``tqadmin purge QUEUE``: drop every message, after the operator typed the queue's name (or ``--yes``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqadmin.admin import gate
from tqadmin.admin.purge import purge, purge_with_backup
from tqadmin.commands.arguments import add_force
from tqadmin.commands.confirmation import confirm_by_name
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import finish


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", metavar="QUEUE", help="queue to empty")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do not ask for the queue name (without it, a run with no terminal is refused, exit 2)",
    )
    parser.add_argument(
        "--backup",
        type=Path,
        metavar="FILE",
        help="write every message to FILE (JSONL; a new file, 0600; an existing one only with --force) first",
    )
    add_force(parser, "the --backup FILE")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "purge")
    if not args.yes:
        confirm(args.queue)
    with ctx.admin() as admin:
        gate.check_admin(admin, "purge", args.queue)
        if args.backup is not None:
            session = admin.open_transfer(args.queue)
            return finish(ctx, purge_with_backup(session, args.queue, args.backup, force=args.force))
        report = purge(admin, args.queue)
    return ctx.finish(report)


def confirm(queue: str) -> None:
    """Ask for the queue's name on a terminal; anything else refuses (exit 2)."""
    confirm_by_name(queue, "purge", f"This drops every message of {queue!r}")
