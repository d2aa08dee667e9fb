"""``tqadmin replay DLQ``: send dead-lettered messages back where they came from, counting the replay.

The path (the broker's own redrive or move, or the client) is chosen by :mod:`tqadmin.admin.paths`, as for
the dashboard; what is the command's own is ``--skip-done``'s look-up in the configured completion store.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from tqadmin.admin import gate
from tqadmin.admin.paths import run_transfer
from tqadmin.commands.context import CommandContext
from tqadmin.commands.transfer_options import add_transfer_options, finish, request_from
from tqadmin.errors import NoDatabase
from tqadmin.files.access import Access
from tqadmin.store import open_store


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="DLQ", help="dead-letter queue to replay from")
    parser.add_argument("--to", metavar="QUEUE", help="send every message here instead of its original queue")
    add_transfer_options(parser)
    parser.add_argument(
        "--skip-done", action="store_true", help="leave jobs the completion store marks done in the DLQ"
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    gate.check_profile(ctx.settings, "replay", dry_run=args.dry_run)
    request = request_from(args, "replay", args.to)
    with ExitStack() as stack:
        already_done = completion_lookup(ctx, stack) if args.skip_done else None
        with ctx.admin() as admin:
            gate.check_admin(
                admin, "replay", args.source, args.to, dry_run=args.dry_run, progress=ctx.progress
            )
            return finish(ctx, run_transfer(admin, request, ctx.progress, already_done=already_done))


def completion_lookup(ctx: CommandContext, stack: ExitStack) -> Callable[[Sequence[str]], set[str]]:
    """``done_among`` of the configured completion store (``--store``), closed when the run ends; on a
    fresh machine (no store file yet) no job is done."""
    try:
        store = open_store(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, access=Access.READ)
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        return lambda _ids: set()
    stack.callback(store.close)
    return lambda ids: set(store.done_among(ids))
