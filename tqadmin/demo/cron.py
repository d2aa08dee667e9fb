"""The demo's cron: two ``tqadmin cron`` instances on one schedule, one of them leading and firing a report
job every few seconds into the reports queue, and how many jobs it fired (the summary counts them in).

The instances run in a namespace of the demo's own (``demo-<prefix>``), so they never compete for the lease
of a real cron sharing the store. What they fired is read from the store, whichever instance fired it: the
schedule's cursor moves past every tick fired or counted as missed, so the ticks between the cursor at the
start and at the end, less those counted missed and those claimed but not marked fired, were fired. A cursor
an earlier run left behind is first moved to now (the ticks between counted as missed), so that a run counts
its own ticks only, however long ago the last one was.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from tqadmin.demo.layout import Layout
from tqadmin.store.cron.base import CronStore

SCHEDULE = "scheduled-report"
EVERY_S = 2
INSTANCES = 2
LOCK_TTL_S = 3.0
REPORT_TASK = "generate_report"


def namespace(layout: Layout) -> str:
    return f"demo-{layout.prefix}"


def write_schedule(layout: Layout, folder: Path) -> Path:
    """The schedule file the cron instances run: one report every ``EVERY_S`` seconds."""
    path = folder / "cron.toml"
    path.write_text(
        "[[schedule]]\n"
        f'name = "{SCHEDULE}"\n'
        f'cron = "*/{EVERY_S} * * * * *"\n'
        f'queue = "{layout.queue_of[REPORT_TASK]}"\n'
        f'task_type = "{REPORT_TASK}"\n'
        'job = { report = "scheduled digest", rows = 500 }\n',
        encoding="utf-8",
    )
    return path


def cron_commands(layout: Layout, schedule: Path) -> dict[str, list[str]]:
    """One ``tqadmin cron`` per instance, run with this interpreter; URLs come through the environment."""
    return {
        f"cron-{n}": [
            sys.executable,
            "-m",
            "tqadmin.cli",
            "cron",
            "--schedule",
            str(schedule),
            "--instance-id",
            f"{layout.prefix}-cron-{n}",
            "--namespace",
            namespace(layout),
            "--lock-ttl",
            str(LOCK_TTL_S),
        ]
        for n in range(1, INSTANCES + 1)
    }


@dataclass(frozen=True, slots=True)
class CronCount:
    """Jobs the cron fired during the run, and ticks claimed but not marked fired (published or not)."""

    fired: int = 0
    pending: int = 0


class CronTally:
    """Counts what the demo's cron fired since :meth:`begin`, from the cron store."""

    def __init__(self, store: CronStore) -> None:
        self._store = store
        self._cursor = 0
        self._missed = 0

    def begin(self, now_s: float) -> None:
        """Note where the schedule stands before the instances start, its cursor armed at the last tick."""
        tick = math.floor(now_s / EVERY_S) * EVERY_S
        cursor = self._store.arm(SCHEDULE, tick)
        if cursor < tick:  # an earlier run's: what it left behind is skipped, with the lease for that moment
            lease = self._store.acquire(f"{SCHEDULE}-tally", LOCK_TTL_S)
            if lease is not None:  # else another run of this prefix leads now: count from where it is
                self._store.mark_missed(lease, SCHEDULE, tick, (tick - cursor) // EVERY_S)
                self._store.release(lease)
                cursor = tick
        self._cursor = cursor
        self._missed = self._store.missed_counts().get(SCHEDULE, 0)

    def read(self) -> CronCount:
        cursor = self._store.cursors([SCHEDULE]).get(SCHEDULE, self._cursor)
        missed = self._store.missed_counts().get(SCHEDULE, 0) - self._missed
        pending = [
            r.scheduled for r in self._store.pending() if r.name == SCHEDULE and r.scheduled > self._cursor
        ]
        behind = sum(1 for scheduled in pending if scheduled <= cursor)
        return CronCount(max(0, (cursor - self._cursor) // EVERY_S - missed - behind), len(pending))

    def close(self) -> None:
        self._store.close()
