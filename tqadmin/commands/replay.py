"""``tqadmin replay DLQ``: send dead-lettered messages back where they came from, counting the replay.

The server-side path (the broker's own move) needs one target for every message, so it is
taken only with ``--to`` or when a look at the queue finds a single original queue; where it cannot rewrite
headers, it does not add to ``x-tq-replays`` (the report says so) and runs only with ``--server-side``.
A broker whose own redrive sends dead letters back where they came from (``server_side_replay``: an SQS
message move task) takes that path by default when nothing needs the client (no filter, limit, rate, dry
run or --skip-done), without a look at the messages first.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace

from tqadmin.admin.scan import distinct_targets
from tqadmin.admin.transfer import TransferOutcome, count_replay, replay_route
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import (
    add_transfer_options,
    finish,
    plan_from,
    require_writable_queues,
    require_writable_unless_dry_run,
    run_client_side,
    run_redrive,
    run_server_side,
    want_server_side,
)
from tqadmin.errors import NoDatabase, UsageError
from tqadmin.plugin.base import BrokerAdmin, refuse_onto_itself
from tqadmin.plugin.models import HEADER_ORIGINAL_QUEUE, ActionReport
from tqadmin.store import open_store

NO_ORIGIN = f"no {HEADER_ORIGINAL_QUEUE} header, no record of the queue it died in, and no --to QUEUE"
SERVER_SIDE_NOTE = (
    "x-tq-replays not incremented (a server-side move copies messages as they are;"
    " use --client-side to count)"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="DLQ", help="dead-letter queue to replay from")
    parser.add_argument("--to", metavar="QUEUE", help="send every message here instead of its original queue")
    add_transfer_options(parser)
    parser.add_argument(
        "--skip-done", action="store_true", help="leave jobs the completion store marks done in the DLQ"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    require_writable_unless_dry_run(args, ctx, "replay")
    refuse_onto_itself("replay", args.source, args.to)
    with ExitStack() as stack:
        already_done = completion_lookup(ctx, stack) if args.skip_done else None
        return _replay(args, ctx, already_done)


def _replay(
    args: argparse.Namespace, ctx: CommandContext, already_done: Callable[[Sequence[str]], set[str]] | None
) -> int:
    with ctx.admin() as admin:
        require_writable_queues(admin, ctx, args, "replay", args.source, args.to)
        plan = plan_from(
            args,
            action="replay",
            source=args.source,
            target=args.to,
            route=replay_route(args.to, admin.deaths),
            rewrite=count_replay,
            already_done=already_done,
            unrouted_reason=NO_ORIGIN,
        )
        if admin.capabilities.server_side_replay:
            if want_server_side(args, "--limit needs the client path" if args.limit else None):
                report = run_redrive(admin, ctx, args.source, args.to)
                if report is not None:
                    return finish(ctx, TransferOutcome(_noted(report, admin)))
            return finish(ctx, run_client_side(admin, ctx, plan))
        # Opt-in only where the server-side path copies messages as they are: it
        # cannot add 1 to x-tq-replays, which docs/interface.md promises for a replay.
        server = args.side == "server" or (args.side is None and admin.capabilities.server_side_rewrites)
        if server and want_server_side(args):
            target = args.to or _single_origin(admin, args)
            if target is not None:
                report = run_server_side(admin, ctx, "replay", args.source, target, limit=args.limit)
                if report is not None:
                    return finish(ctx, TransferOutcome(_noted(report, admin)))
        return finish(ctx, run_client_side(admin, ctx, plan))


def _single_origin(admin: BrokerAdmin, args: argparse.Namespace) -> str | None:
    """The one original queue of every message in the DLQ, or ``None`` (then the client path runs)."""
    targets = distinct_targets(admin.open_transfer(args.source), replay_route(None, admin.deaths))
    if len(targets) == 1 and None not in targets:
        return targets.pop()
    if args.side == "server":
        raise UsageError("--server-side is not possible here: the messages have different original queues")
    return None


def _noted(report: ActionReport, admin: BrokerAdmin) -> ActionReport:
    if admin.capabilities.server_side_rewrites:
        return report
    return replace(report, detail=f"{report.detail}; {SERVER_SIDE_NOTE}")


def completion_lookup(ctx: CommandContext, stack: ExitStack) -> Callable[[Sequence[str]], set[str]]:
    """``done_among`` of the configured completion store (``--store``), closed when the run ends; on a
    fresh machine (no store file yet) no job is done."""
    try:
        store = open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, create=False)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        return lambda _ids: set()
    stack.callback(store.close)
    return lambda ids: set(store.done_among(ids))
