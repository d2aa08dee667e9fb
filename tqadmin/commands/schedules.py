"""``tqadmin schedules``: each schedule's next and last fire, lateness, and who leads with which token;
the paused schedules and, with ``--next N``, each one's next N fire times (:mod:`~.cron.upcoming`)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from tqadmin.commands.arguments import positive
from tqadmin.commands.context import CommandContext
from tqadmin.commands.cron import add_namespace_option
from tqadmin.pipeline.cron.schedule import Schedule, load_schedules
from tqadmin.pipeline.cron.status import CronStatus, iso, schedule_rows
from tqadmin.pipeline.cron.upcoming import annotate, render_extras
from tqadmin.reading.reading import Part
from tqadmin.show.tables import table


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--schedule",
        type=Path,
        default=None,
        metavar="FILE.toml",
        help="a schedule file (default: the schedules running cron instances registered in the store)",
    )
    parser.add_argument(
        "--next",
        type=positive(int),
        default=None,
        metavar="N",
        help="also list each schedule's next N fire times",
    )
    add_namespace_option(parser)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    file_schedules = load_schedules(args.schedule) if args.schedule else ()
    reading = ctx.read(
        {Part.CRON, Part.PAUSES}, needed=Part.CRON, cron_namespace=args.namespace, schedules=file_schedules
    )
    status = reading.cron or before_any_cron(file_schedules)
    document = status.to_json()
    if reading.pauses is None:
        ctx.progress(f"tqadmin: warning: the pauses could not be read: {reading.unread[Part.PAUSES].why}")
    pauses = reading.pauses.standing if reading.pauses is not None else ()
    paused = annotate(document, status.rows, pauses, status.now, args.next)
    ctx.emit(
        document,
        lambda: "\n".join([render(status), *render_extras(status.rows, paused, status.now, args.next)]),
    )
    return 0


def before_any_cron(file_schedules: Sequence[Schedule]) -> CronStatus:
    """What a store no cron has written says (a fresh machine): no leader, token 0, nothing fired yet."""
    now = time.time()
    rows = schedule_rows([(s, "file") for s in file_schedules], None, {}, {}, now)
    return CronStatus(rows, None, 0, (), (), now)


def _claims(status: CronStatus, shown: int = 3) -> str:
    """The oldest pending ticks, each with who claimed it and what happens to it next (docs/cron.md)."""
    leader = status.leader.token if status.leader else None
    parts = []
    for tick in status.pending_ticks[:shown]:
        if not tick.token:
            parts.append(f"{tick.id} (its record expired)")
        elif tick.token == leader:
            parts.append(f"{tick.id} by {tick.instance} (token {tick.token}, the leader: publishing)")
        else:
            parts.append(
                f"{tick.id} by {tick.instance} (token {tick.token}, not the leader: published again one"
                f" lock TTL after the takeover unless {tick.instance} marks it published)"
            )
    more = status.pending - shown
    return ", ".join(parts) + (f", +{more} more" if more > 0 else "")


def render(status: CronStatus) -> str:
    leader = status.leader
    if leader is None:
        head = f"leader: none (the lease is free; latest fencing token {status.fencing_token})"
    else:
        head = (
            f"leader: {leader.instance}  fencing token {leader.token}  lease age {leader.lease_age_s:.1f}s"
            f"  expires in {leader.expires_in_s:.1f}s"
        )
    lines = [head]
    if status.instances:
        names = ", ".join(f"{i.instance} ({i.last_seen_age_s:.0f}s ago)" for i in status.instances)
        lines.append(f"instances: {names}")
    if status.pending:
        lines.append(f"pending: {status.pending} tick(s) claimed but not yet confirmed: {_claims(status)}")
    rows = [
        (
            r.name,
            r.cron,
            r.timezone,
            r.queue,
            iso(r.next_fire),
            iso(r.last_fire),
            None if r.lateness_s is None else f"{r.lateness_s:.2f}s",
            r.missed,
            r.last_fencing_token,
        )
        for r in status.rows
    ]
    headers = ("SCHEDULE", "CRON", "TZ", "QUEUE", "NEXT FIRE", "LAST FIRE", "LATE", "MISSED", "TOKEN")
    lines.append(
        table(headers, rows) if rows else "no schedules (give --schedule FILE, or start tqadmin cron)"
    )
    return "\n".join(lines)
