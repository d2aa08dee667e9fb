"""``tqadmin purge QUEUE``: drop every message, after the operator typed the queue's name (or ``--yes``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from tqadmin.admin.purge import purge_with_backup
from tqadmin.commands.arguments import add_force
from tqadmin.commands.confirmation import confirm_by_name
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import finish
from tqadmin.plugin.capabilities import Operation
from tqadmin.plugin.models import ActionReport


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
    ctx.settings.require_writable("purge")
    if not args.yes:
        confirm(args.queue)
    with ctx.admin() as admin:
        admin.capabilities.require(Operation.PURGE)
        admin.require_writable("purge", args.queue)
        if args.backup is not None:
            session = admin.open_transfer(args.queue)
            return finish(ctx, purge_with_backup(session, args.queue, args.backup, force=args.force))
        purged = admin.purge(args.queue)
    report = ActionReport(action="purge", source=args.queue, target=args.queue, matched=purged, purged=purged)
    return ctx.finish(report)


def confirm(queue: str) -> None:
    """Ask for the queue's name on a terminal; anything else refuses (exit 2)."""
    confirm_by_name(queue, "purge", f"This drops every message of {queue!r}")
