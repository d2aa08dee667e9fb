"""``tqadmin pause QUEUE``: stop every tqadmin worker starting a queue's (or one task type's) jobs;
``tqadmin pause --schedule NAME``: the cron's leader skips the schedule's ticks.

A write: refused in read-only mode (exit 6) before anything is written, confirmed like ``purge`` (the queue's
name typed, or ``--yes``), audited with who, why and until when. ``--for`` is required, ``--for forever``
included, so nothing is paused for ever by accident.
"""

from __future__ import annotations

import argparse

from tqadmin.admin import gate, pausing
from tqadmin.commands.confirmation import confirm_by_name
from tqadmin.commands.context import CommandContext
from tqadmin.commands.pauses import add_target, named, open_writer, target_of, warn
from tqadmin.errors import NoDatabase, UsageError
from tqadmin.show.broker_text import escaped
from tqadmin.store.pauses.base import FOREVER, parse_duration


def configure(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "jobs stop starting")
    parser.add_argument(
        "--for",
        dest="duration",
        metavar="DURATION",
        help="how long: 30s, 10m, 2h, 1d, or forever (until resumed); required",
    )
    parser.add_argument("--reason", default="", metavar="TEXT", help="why, shown to everyone who looks")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    if args.duration is None:
        raise UsageError(
            f"pause needs --for DURATION (30s, 10m, 2h) or --for {FOREVER}: nothing is paused for ever"
            " by accident; nothing was written"
        )
    for_s = parse_duration(args.duration)
    target = target_of(args)
    gate.check_profile(ctx.settings, "pause")
    if not args.yes:
        how_long = "until resumed" if for_s is None else f"for {args.duration}"
        stops = "The cron skips the ticks of" if target.schedule else "Workers stop starting"
        confirm_by_name(named(target), "pause", f"{stops} {target.describe()} {how_long}")
    if target.queue is not None:
        _refuse_foreign(ctx, target.queue)
    with open_writer(ctx) as store:
        written, warnings = pausing.pause(
            ctx.settings, store, target, reason=args.reason, for_s=for_s, via="cli"
        )
        now = store.now()
    warn(ctx, warnings)
    document = {"action": "pause", "target": named(target), "pause": written.to_json(now)}
    ctx.emit(document, lambda: escaped(f"paused {target.describe()}: {written.describe(now)}"))
    return 0


def _refuse_foreign(ctx: CommandContext, queue: str) -> None:
    try:
        with ctx.admin() as admin:
            pausing.refuse_foreign(admin, "pause", queue)
    except NoDatabase:  # an SQLite broker not created yet: no queue in it, another framework's or not
        pass
