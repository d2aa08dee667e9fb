"""``tqadmin move SRC DST``: move messages, each copy confirmed before its original is acked."""

from __future__ import annotations

import argparse

from tqadmin.admin.transfer import TransferOutcome, to_queue
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import (
    add_transfer_options,
    finish,
    plan_from,
    require_writable_queues,
    require_writable_unless_dry_run,
    run_client_side,
    run_server_side,
    want_server_side,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="SRC", help="queue to take messages from")
    parser.add_argument("target", metavar="DST", help="queue to put them in (must exist)")
    add_transfer_options(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    require_writable_unless_dry_run(args, ctx, "move")
    # the plan refuses a move onto the source itself (exit 2), before anything connects
    plan = plan_from(args, action="move", source=args.source, target=args.target, route=to_queue(args.target))
    with ctx.admin() as admin:
        require_writable_queues(admin, ctx, args, "move", args.source, args.target)
        if want_server_side(args):
            report = run_server_side(admin, ctx, "move", args.source, args.target, limit=args.limit)
            if report is not None:
                return finish(ctx, TransferOutcome(report))
        return finish(ctx, run_client_side(admin, ctx, plan))
