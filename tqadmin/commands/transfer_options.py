"""What ``move`` and ``replay`` share: their options, read into the action service's request, and how a run
ends. Choosing the path and running it is :mod:`tqadmin.admin.paths`'s job.

``--client-side`` forces the client path; ``--server-side`` refuses to run when it cannot be honoured.
"""

from __future__ import annotations

import argparse

from tqadmin.admin.plans import TransferRequest
from tqadmin.admin.transfer import TransferOutcome
from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext


def add_transfer_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=positive(int), metavar="N", help="move at most N matching messages")
    parser.add_argument(
        "--filter",
        metavar="EXPR",
        help="only messages matching every term of EXPR: FIELD=VALUE, FIELD~TEXT (contains, any case),"
        " != and !~ negate, terms joined by ',' (task_type=resize_image,error~Timeout); FIELD is a job"
        " field, a header, or reason, error, attempts, original_queue, replays (the x-tq-* headers)",
    )
    parser.add_argument("--rate", type=positive(float), metavar="R", help="at most R messages per second")
    parser.add_argument("--dry-run", action="store_true", help="count what would move; change nothing")
    path = parser.add_mutually_exclusive_group()
    path.add_argument(
        "--server-side",
        dest="side",
        action="store_const",
        const="server",
        help="let the broker move the messages itself; move's default when eligible",
    )
    path.add_argument(
        "--client-side", dest="side", action="store_const", const="client", help="move through this client"
    )


def request_from(args: argparse.Namespace, action: str, target: str | None) -> TransferRequest:
    """The action service's request from the shared options (refused here, exit 2, when it cannot run)."""
    return TransferRequest(
        action=action,
        source=args.source,
        target=target,
        filter=args.filter,
        limit=args.limit,
        rate=args.rate,
        dry_run=args.dry_run,
        skip_done=getattr(args, "skip_done", False),
        side=args.side,
    )


def finish(ctx: CommandContext, outcome: TransferOutcome) -> int:
    """Audit and print the report; an error that stopped the run then decides the exit code."""
    code = ctx.finish(outcome.report)
    if outcome.error is not None:
        raise outcome.error
    return code
