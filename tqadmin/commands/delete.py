"""``tqadmin delete QUEUE --id ID``: delete one message found by job id; the others keep their order."""

from __future__ import annotations

import argparse

from tqadmin.admin import gate
from tqadmin.admin.scan import delete_by_id
from tqadmin.commands.context import CommandContext


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", metavar="QUEUE", help="queue holding the message")
    parser.add_argument(
        "--id", dest="job_id", required=True, metavar="ID", help="job id (message_id or body id)"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "delete")
    with ctx.admin() as admin:
        gate.check_admin(admin, "delete", args.queue)
        report = delete_by_id(admin.open_transfer(args.queue), args.queue, args.job_id)
    return ctx.finish(report)
