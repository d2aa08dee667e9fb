"""``tqadmin pauses``: the pauses that stand, from the profile's state store (a read: writes nothing)."""

from __future__ import annotations

import argparse
from contextlib import closing
from typing import TYPE_CHECKING

from tqadmin.commands.context import CommandContext
from tqadmin.errors import NoDatabase, UsageError
from tqadmin.files.access import Access
from tqadmin.show.tables import table
from tqadmin.store.factory import open_pauses
from tqadmin.store.pauses.base import Pause, PauseStore, Target, iso

if TYPE_CHECKING:
    from contextlib import AbstractContextManager


def configure(parser: argparse.ArgumentParser) -> None:
    """No options of its own: ``--json`` prints ``{"pauses": [...]}``."""


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    try:
        with closing(
            open_pauses(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s, access=Access.READ)
        ) as store:
            now, standing = store.standing()
    except NoDatabase as missing:
        ctx.unless_fresh(missing)
        now, standing = 0.0, []
    ctx.emit({"pauses": [p.to_json(now) for p in standing]}, lambda: render(standing, now))
    return 0


def render(standing: list[Pause], now: float) -> str:
    if not standing:
        return "no pause stands"
    rows = [
        (
            p.target.schedule or p.target.queue,
            p.target.task_type or ("(schedule)" if p.target.schedule else "(all)"),
            p.left_text(now),
            "forever" if p.until is None else iso(p.until),
            p.who,
            iso(p.since),
            p.reason,
        )
        for p in standing
    ]
    return table(("TARGET", "TASK TYPE", "LEFT", "UNTIL", "WHO", "SINCE", "REASON"), rows)


def add_target(parser: argparse.ArgumentParser, what: str) -> None:
    """QUEUE, ``--task-type``, ``--schedule`` and ``--yes``, worded alike for ``pause`` and ``resume``."""
    parser.add_argument("queue", metavar="QUEUE", nargs="?", help=f"queue whose {what}")
    parser.add_argument(
        "--task-type", metavar="T", help=f"only this task type's {what} (the others as they are)"
    )
    parser.add_argument(
        "--schedule", metavar="NAME", help=f"the cron schedule whose {what}, instead of a queue (its ticks)"
    )
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do not ask for the queue name (without it, a run with no terminal is refused, exit 2)",
    )


def target_of(args: argparse.Namespace) -> Target:
    """A queue (with or without ``--task-type``) or ``--schedule NAME``: exactly one, or a usage error."""
    if (args.queue is None) == (args.schedule is None):
        raise UsageError("name a QUEUE or --schedule NAME (one of them); nothing was written")
    if args.schedule is not None:
        if args.task_type:
            raise UsageError("--task-type is for a queue's jobs, not with --schedule; nothing was written")
        return Target(schedule=args.schedule)
    return Target(queue=args.queue, task_type=args.task_type or None)


def named(target: Target) -> str:
    """What the confirmation asks for and ``--json`` calls the target: the queue, or the schedule."""
    return target.schedule if target.schedule is not None else target.queue or ""


def open_writer(ctx: CommandContext) -> AbstractContextManager[PauseStore]:
    return closing(open_pauses(ctx.settings.store_url, timeout_s=ctx.settings.timeout_s))


def warn(ctx: CommandContext, warnings: list[str]) -> None:
    for warning in warnings:
        ctx.progress(f"tqadmin: warning: {warning}")
