"""``tqadmin move SRC DST``: move messages, each copy confirmed before its original is acked."""

from __future__ import annotations

import argparse

from tqadmin.admin import gate
from tqadmin.admin.paths import run_transfer
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import add_transfer_options, finish, request_from


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SRC", help="queue to take messages from")
    parser.add_argument("target", metavar="DST", help="queue to put them in (must exist)")
    add_transfer_options(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "move", dry_run=args.dry_run)
    # the request refuses a move onto the source itself (exit 2), before anything connects
    request = request_from(args, "move", args.target)
    with ctx.admin() as admin:
        gate.check_admin(admin, "move", args.source, args.target, dry_run=args.dry_run, progress=ctx.progress)
        return finish(ctx, run_transfer(admin, request, ctx.progress))
