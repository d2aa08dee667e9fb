"""What ``tqadmin schedules`` adds to a schedule's row: its next N fire times, and the pause that stands on
it (the leader skips its ticks while one does: :mod:`tqadmin.pipeline.cron.control`)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import Any

from tqadmin.pipeline.cron.schedule import Schedule
from tqadmin.pipeline.cron.status import ScheduleRow, iso
from tqadmin.pipeline.cron.timing import ticks_after
from tqadmin.store.pauses.base import Pause

MAX_NEXT = 1000


def next_fires(row: ScheduleRow, now: float, count: int) -> list[int]:
    """The scheduled times of the row's next ``count`` ticks after ``now`` (as ``next_fire``: the tick's
    scheduled time, its publish ``splay_offset_s`` later)."""
    schedule = Schedule(row.name, row.cron, row.queue, row.task_type, timezone=row.timezone)
    return list(islice(ticks_after(schedule, now - row.splay_offset_s), min(count, MAX_NEXT)))


def annotate(
    document: dict[str, Any],
    rows: Iterable[ScheduleRow],
    pauses: Iterable[Pause],
    now: float,
    count: int | None,
) -> dict[str, Pause]:
    """Add ``paused`` (the pause's record, or null) and, when ``count`` is given, ``next_fires`` (ISO 8601
    UTC) to each schedule of ``document`` (``{"schedules": [...]}``); returns the pauses by schedule."""
    paused = {p.target.schedule: p for p in pauses if p.target.schedule is not None}
    by_name = {row.name: row for row in rows}
    for item in document["schedules"]:
        pause = paused.get(item["name"])
        item["paused"] = None if pause is None else pause.to_json(now)
        row = by_name.get(item["name"])
        if count is not None and row is not None:
            item["next_fires"] = [iso(t) for t in next_fires(row, now, count)]
    return {name: p for name, p in paused.items() if name in by_name}


def render_extras(
    rows: Iterable[ScheduleRow], paused: dict[str, Pause], now: float, count: int | None
) -> list[str]:
    """The lines under the table: each paused schedule, then each schedule's next fire times."""
    lines = [
        f"paused {name}: {pause.describe(now)} (by {pause.who}); its ticks are skipped"
        for name, pause in sorted(paused.items())
    ]
    if count is not None:
        for row in rows:
            times = ", ".join(iso(t) or "" for t in next_fires(row, now, count))
            lines.append(f"next {row.name}: {times}")
    return lines
