"""The misfire policy, pure: which ticks to fire now, which are too old and are skipped.

A tick is *due* once its scheduled time plus the schedule's splay offset has passed. A due tick is fired if it
is at most ``misfire_grace`` seconds late; an older one is *missed*: counted, logged and skipped. So after a
failover the new leader fires the few ticks the old one left behind, but after an outage of a day a
once-a-second schedule does not fire 86,400 jobs at once: never a burst larger than the grace allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.timing import next_tick, prev_tick, splay_offset, ticks_after

MAX_DUE_PER_PLAN = 100  # the scheduler renews its lease between batches, however many ticks are due
MAX_MISSED_COUNTED = 10_000  # beyond this the count is a lower bound and the rest is skipped in one jump


@dataclass(frozen=True, slots=True)
class Plan:
    """What to do with one schedule now.

    ``missed`` ticks (first ``missed_first``, last ``missed_last``) are skipped; ``missed_at_least`` says the
    count stopped at :data:`MAX_MISSED_COUNTED`. ``due`` ticks are to be fired in order. ``next_fire_at`` is
    the wall time at which the first tick that is not due yet fires (its scheduled time plus splay).
    """

    due: tuple[int, ...]
    missed: int
    missed_first: int | None
    missed_last: int | None
    missed_at_least: bool
    next_fire_at: float


def plan(schedule: Schedule, cursor: float, now: float) -> Plan:
    """Plan the ticks after ``cursor`` (the last tick handled) as of ``now``."""
    offset = splay_offset(schedule.name, schedule.splay)
    oldest_on_time = now - offset - schedule.misfire_grace  # a tick before this is past its grace
    missed = 0
    missed_first: int | None = None
    missed_last: int | None = None
    at_least = False
    ticks = ticks_after(schedule, cursor)
    tick = next(ticks)
    while tick < oldest_on_time:
        missed += 1
        missed_first = tick if missed_first is None else missed_first
        missed_last = tick
        if missed >= MAX_MISSED_COUNTED:
            at_least = True
            missed_last = prev_tick(schedule, oldest_on_time - 1e-3)
            ticks = ticks_after(schedule, missed_last)
        tick = next(ticks)
    due: list[int] = []
    while tick + offset <= now and len(due) < MAX_DUE_PER_PLAN:
        due.append(tick)
        tick = next(ticks)
    if len(due) == MAX_DUE_PER_PLAN:
        tick = next_tick(schedule, due[-1])
    return Plan(tuple(due), missed, missed_first, missed_last, at_least, tick + offset)
