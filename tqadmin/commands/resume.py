"""``tqadmin resume QUEUE``: end a pause; every worker starts the queue's (or task type's) jobs again
within a heartbeat. A write, confirmed and audited like ``pause``."""

from __future__ import annotations

import argparse

from tqadmin.admin import gate, pausing
from tqadmin.commands.confirmation import confirm_by_name
from tqadmin.commands.context import CommandContext
from tqadmin.commands.pauses import add_target, named, open_writer, target_of, warn


def configure(parser: argparse.ArgumentParser) -> None:
    add_target(parser, "pause ends")


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    target = target_of(args)
    gate.check_profile(ctx.settings, "resume")
    if not args.yes:
        starts = "The cron fires the ticks of" if target.schedule else "Workers start"
        confirm_by_name(named(target), "resume", f"{starts} {target.describe()} again")
    with open_writer(ctx) as store:
        ended, warnings = pausing.resume(ctx.settings, store, target, via="cli")
    warn(ctx, warnings)
    document = {
        "action": "resume",
        "target": named(target),
        "pause": None if ended is None else ended.to_json(),
    }
    said = (
        f"resumed {target.describe()}" if ended else f"no pause stood on {target.describe()}: nothing to do"
    )
    ctx.emit(document, lambda: said)
    return 0
