"""``tqadmin queues``: every queue's figures in one poll.

OLDEST is the age of the oldest message that can be taken now, DLQ AGE that of the oldest dead letter, and
DRAIN the time the queue takes to empty at the present pace (``growing`` when it is not emptying): one poll
estimates it from the broker's ack and publish rates, where it gives them
(:class:`~tqadmin.reading.drain.DrainWindow`).

Retry delay queues (RabbitMQ's ``Q.retry.5s`` tiers) are folded into their work queue's DELAYED figure, so
the queues an on-call engineer looks for are not buried under 25 tiers each; ``--all`` lists them too.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import Any

from tqadmin.commands.context import CommandContext
from tqadmin.frameworks import own_pauses
from tqadmin.plugin.kit.delays import work_queues
from tqadmin.plugin.models import QueueListing, QueueStats
from tqadmin.reading.drain import drain_text
from tqadmin.reading.reading import Part, ProfileReading
from tqadmin.show.broker_text import escaped
from tqadmin.show.finite import finite
from tqadmin.show.tables import table
from tqadmin.store.pauses.base import Pause, of_queue


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--filter", dest="name_filter", metavar="TEXT", help="only queues whose name contains TEXT"
    )
    parser.add_argument(
        "--all",
        dest="all_queues",
        action="store_true",
        help="list retry delay queues too (otherwise counted in their work queue's DELAYED)",
    )


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    reading = ctx.read({Part.QUEUES, Part.PAUSES}, needed=Part.QUEUES)
    listing = reading.listing or QueueListing(())
    unavailable = dict(reading.capabilities.unavailable) if reading.capabilities else {}
    listed = work_queues(listing.queues, include_delay_queues=args.all_queues)
    queues = [q for q in listed if not args.name_filter or args.name_filter in q.name]
    now, pauses = _pauses(ctx, reading)
    document = {
        "queues": [{**q.to_json(), "paused": _paused_json(pauses, q.name, now)} for q in queues],
        "alarms": [{"node": a.node, "kind": a.kind, "detail": a.detail} for a in listing.alarms],
        "unavailable": unavailable,
    }
    shown = QueueListing(tuple(queues), listing.alarms, listing.broker)
    ctx.emit(document, lambda: "\n".join([render(shown, unavailable), *paused_lines(queues, pauses, now)]))
    return 0


def _pauses(ctx: CommandContext, reading: ProfileReading) -> tuple[float, list[Pause] | None]:
    """The pauses standing in the profile's store; ``None`` (each queue's ``paused`` null, a warning on
    stderr) when the store cannot be read: the queues are still listed."""
    if reading.pauses is None:
        why = reading.unread[Part.PAUSES].why
        ctx.progress(f"tqadmin: warning: the pauses could not be read: {why}")
        return 0.0, None
    return reading.pauses.now_s, list(reading.pauses.standing)


def _paused_json(pauses: list[Pause] | None, queue: str, now: float) -> list[dict[str, Any]] | None:
    """``paused``: the queue's pauses (``task_type`` null for the whole queue), [] when none, null unknown."""
    return None if pauses is None else [p.to_json(now) for p in of_queue(pauses, queue)]


def paused_lines(queues: Iterable[QueueStats], pauses: list[Pause] | None, now: float) -> list[str]:
    """``paused orders (charge_card): paused 12m left: <reason>``, one line per pause of a queue listed."""
    lines = []
    for q in queues:
        if (own := own_pauses.said(q)) is not None:  # another framework's own pause (Sidekiq's)
            lines.append(escaped(f"paused {q.name}: {own}"))
        for p in of_queue(pauses or (), q.name):
            what = f"{q.name} ({p.target.task_type})" if p.target.task_type else q.name
            lines.append(escaped(f"paused {what}: {p.describe(now)}"))
    return lines


def render(listing: QueueListing, unavailable: dict[str, str] | None = None) -> str:
    lines = [escaped(f"ALARM {a.kind} on {a.node} {a.detail}".rstrip()) for a in listing.alarms]
    rows = [
        (
            q.name,
            q.ready,
            q.unacked,
            q.messages,
            q.delayed,
            q.consumers,
            _rate(q.publish_rate),
            _rate(q.deliver_rate),
            _rate(q.ack_rate),
            age(q.oldest_age_s),
            drain_text(q, age),
            q.dlq,
            q.dlq_messages,
            age(q.dlq_oldest_age_s),
        )
        for q in listing.queues
    ]
    headers = (
        "QUEUE",
        "READY",
        "UNACKED",
        "TOTAL",
        "DELAYED",
        "CONSUMERS",
        "PUB/S",
        "DELIV/S",
        "ACK/S",
        "OLDEST",
        "DRAIN",
        "DLQ",
        "DLQ MSGS",
        "DLQ AGE",
    )
    lines.append(table(headers, rows) if rows else "no queues")
    lines += [
        f"{COLUMN_OF.get(figure, figure)}: - (unavailable: {why})"
        for figure, why in (unavailable or {}).items()
    ]
    read_only: dict[str, list[str]] = {}  # another framework's queues, by the reason tqadmin only shows them
    for q in listing.queues:
        if q.read_only:
            read_only.setdefault(q.read_only, []).append(q.name)
    lines += [escaped(f"read-only {', '.join(names)}: {why}") for why, names in read_only.items()]
    return "\n".join(lines)


COLUMN_OF = {
    "consumers": "CONSUMERS",
    "publish_rate": "PUB/S",
    "deliver_rate": "DELIV/S",
    "ack_rate": "ACK/S",
    "oldest_age_s": "OLDEST",
    "dlq_oldest_age_s": "DLQ AGE",
}


def _rate(value: float | None) -> float | None:
    """Messages per second to one decimal, kept a number so the table right-aligns it."""
    value = finite(value)
    return None if value is None else round(value, 1)


def age(seconds: float | None) -> str | None:
    """``42s``, ``3m07s``, ``5h02m``, ``2d03h``: two units are enough to judge how stale a queue is."""
    seconds = finite(seconds)
    if seconds is None:
        return None
    whole = int(seconds)
    for unit, size, sub_unit, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if whole >= size:
            return f"{whole // size}{unit}{(whole % size) // sub_size:02d}{sub_unit}"
    return f"{whole}s"
