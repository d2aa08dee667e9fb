"""When a schedule fires: croniter for the calendar, a hash of the name for the splay.

All times are epoch seconds; ticks are whole seconds (cron has no finer field), so a tick is an ``int`` and
its job id ``cron:<name>:<tick>`` is the same on every instance. Calendar arithmetic is done in the schedule's
own time zone (so ``0 2 * * *`` in Europe/Paris follows daylight saving time as croniter defines it) and
converted back to epoch seconds at once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import datetime

from croniter import croniter

from tqadmin.pipeline.cron.schedule import Schedule


def _iterator(schedule: Schedule, start: float) -> croniter:
    return croniter(
        schedule.cron, datetime.fromtimestamp(start, schedule.zone), second_at_beginning=schedule.has_seconds
    )


def next_tick(schedule: Schedule, after: float) -> int:
    """The first tick strictly after ``after``."""
    return round(float(_iterator(schedule, after).get_next(float)))


def prev_tick(schedule: Schedule, at_or_before: float) -> int:
    """The last tick at or before ``at_or_before``."""
    nxt = next_tick(schedule, at_or_before - 1)
    if nxt <= at_or_before:
        return nxt
    return round(float(_iterator(schedule, at_or_before).get_prev(float)))


def ticks_after(schedule: Schedule, after: float) -> Iterator[int]:
    """Every tick strictly after ``after``, in order, without end."""
    iterator = _iterator(schedule, after)
    while True:
        yield round(float(iterator.get_next(float)))


def splay_offset(name: str, splay: float) -> float:
    """A stable offset in ``[0, splay)`` seconds for this schedule name, the same on every instance and run.

    A hash rather than a random draw, so that every instance agrees on when a tick is due (a leader that takes
    over fires at the same moment the old one would have) and the spread survives restarts.
    """
    if splay <= 0:
        return 0.0
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return round(fraction * splay, 3) % splay
