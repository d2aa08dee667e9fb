"""``tqadmin dead-letters DLQ``: why messages died, grouped with counts; the queue is left as it was."""

from __future__ import annotations

import argparse

from tqadmin.admin.dead_letters import GROUP_FIELDS, dead_letter_groups
from tqadmin.commands.context import CommandContext
from tqadmin.plugin.capabilities import Operation
from tqadmin.show.broker_text import escaped
from tqadmin.show.tables import table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("queue", metavar="DLQ", help="dead-letter queue to read (nothing is consumed)")
    parser.add_argument("--group-by", choices=GROUP_FIELDS, default="reason", help="grouping (reason)")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    with ctx.admin() as admin:
        admin.capabilities.require(Operation.PEEK)
        groups = dead_letter_groups(admin.open_transfer(args.queue), args.group_by, admin.deaths)
    document = {"queue": args.queue, "groups": [{args.group_by: key, "count": n} for key, n in groups]}
    ctx.emit(
        document,
        lambda: (
            table([args.group_by.upper(), "COUNT"], [[k, n] for k, n in groups])
            if groups
            else f"no messages in {escaped(args.queue)}"
        ),
    )
    return 0
