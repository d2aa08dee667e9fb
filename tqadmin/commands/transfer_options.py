"""What ``move`` and ``replay`` share: their options, the choice of path, and how a run ends.

Server-side (the broker's own move) is the default when it can do the job exactly: no filter, no rate, no
dry run.
``--client-side`` forces the client path; ``--server-side`` refuses to run when it cannot be honoured.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import replace

from tqadmin.admin.filters import parse_filter
from tqadmin.admin.transfer import Route, TransferOutcome, TransferPlan, transfer
from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext
from tqadmin.errors import PartialFailure, QueueReadOnly, UsageError
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.plugin.models import ActionReport, Message


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


def server_side_possible(args: argparse.Namespace) -> str | None:
    """Why the server-side path cannot honour these options, or ``None`` when it can."""
    if args.filter:
        return "--filter needs the client path"
    if args.rate:
        return "--rate needs the client path"
    if args.dry_run:
        return "--dry-run needs the client path"
    if getattr(args, "skip_done", False):
        return "--skip-done needs the client path"
    return None


def want_server_side(args: argparse.Namespace, extra_reason: str | None = None) -> bool:
    reason = server_side_possible(args) or extra_reason
    if args.side == "server" and reason:
        raise UsageError(f"--server-side is not possible here: {reason}")
    return args.side != "client" and reason is None


def require_writable_unless_dry_run(args: argparse.Namespace, ctx: CommandContext, action: str) -> None:
    """Writes are refused in read-only mode before connecting; a dry run writes nothing, so it may look."""
    if not args.dry_run:
        ctx.settings.require_writable(action)


def require_writable_queues(
    admin: BrokerAdmin, ctx: CommandContext, args: argparse.Namespace, action: str, *queues: str | None
) -> None:
    """A run that would write to a queue tqadmin only shows is refused before anything is read; a dry run
    only reads, so it still counts what would be selected, and says that the real run would be refused."""
    try:
        admin.require_writable(action, *queues)
    except QueueReadOnly as refusal:
        if not args.dry_run:
            raise
        ctx.progress(f"{action}: dry run only; a real run is refused: {refusal.queue} is {refusal.reason}")


def run_server_side(
    admin: BrokerAdmin, ctx: CommandContext, action: str, source: str, target: str, *, limit: int | None
) -> ActionReport | None:
    """The broker's own move (a RabbitMQ shovel); ``None`` when it is not available (then said so)."""
    return _on_the_broker(
        admin, ctx, action, f"{source} -> {target}", lambda: admin.server_side_move(source, target, limit)
    )


def run_redrive(admin: BrokerAdmin, ctx: CommandContext, dlq: str, target: str | None) -> ActionReport | None:
    """The broker's own redrive of a dead-letter queue (an SQS message move task), to ``target`` or where
    each message came from; ``None`` when it is not available (then said so)."""
    where = f"{dlq} -> {target or 'the queues the messages came from'}"
    return _on_the_broker(
        admin, ctx, "replay", where, lambda: admin.server_side_replay(dlq, target, ctx.progress)
    )


def _on_the_broker(
    admin: BrokerAdmin, ctx: CommandContext, action: str, where: str, call: Callable[[], ActionReport | None]
) -> ActionReport | None:
    ctx.progress(f"{action}: server-side, {where}")
    try:
        report = call()
    except KeyboardInterrupt:
        raise PartialFailure(
            f"{action} interrupted: a server-side move already started keeps moving the messages inside the"
            " broker (nothing is lost); run the same command again to wait for it to finish"
        ) from None
    if report is None:
        needs = admin.capabilities.server_side_needs
        ctx.progress(
            f"{action}: server-side move not available{f' (it needs {needs})' if needs else ''};"
            " moving through the client"
        )
        return None
    return replace(report, action=action)


def run_client_side(admin: BrokerAdmin, ctx: CommandContext, plan: TransferPlan) -> TransferOutcome:
    where = f"{plan.source} -> {plan.target}" if plan.target else f"{plan.source} -> original queues"
    ctx.progress(f"{plan.action}: client-side, {where}")
    outcome = transfer(admin.open_transfer(plan.source), plan, ctx.progress)
    detail = "client-side: confirmed copies, originals acked after" + (
        f"; {outcome.report.detail}" if outcome.report.detail else ""
    )
    return TransferOutcome(replace(outcome.report, detail=detail), outcome.error)


def finish(ctx: CommandContext, outcome: TransferOutcome) -> int:
    """Audit and print the report; an error that stopped the run then decides the exit code."""
    code = ctx.finish(outcome.report)
    if outcome.error is not None:
        raise outcome.error
    return code


def plan_from(
    args: argparse.Namespace,
    *,
    action: str,
    source: str,
    target: str | None,
    route: Route,
    rewrite: Callable[[Message], Message] | None = None,
    already_done: Callable[[Sequence[str]], set[str]] | None = None,
    unrouted_reason: str = "no target queue",
) -> TransferPlan:
    """The plan for the client path from the shared options."""
    return TransferPlan(
        action=action,
        source=source,
        target=target,
        route=route,
        matches=parse_filter(args.filter),
        rewrite=rewrite or (lambda message: message),
        limit=args.limit,
        rate=args.rate,
        dry_run=args.dry_run,
        already_done=already_done,
        unrouted_reason=unrouted_reason,
    )
