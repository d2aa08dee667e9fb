"""What ``tqadmin schedules`` and the TUI's cron screen show, computed once for both.

:func:`schedule_rows` is pure (schedules, leader, fire records, a time) so the screen can be tested with a
frozen clock; :func:`read_status` gathers those inputs from a :class:`CronStore` in a few calls however many
schedules there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tqadmin.pipeline.cron.schedule import Schedule, ScheduleError, schedule_from_mapping
from tqadmin.pipeline.cron.timing import next_tick, splay_offset
from tqadmin.store.cron.base import CronStore, FiredTick, LeaderInfo, Registration, TickRecord

DEFAULT_FORGET_AFTER_S = (
    86_400.0  # instances silent this long are no longer shown (a cron restart prunes them)
)


def iso(epoch: float | None) -> str | None:
    """ISO 8601 UTC with a ``Z``, second precision when whole, as docs/interface.md asks for fire times."""
    if epoch is None:
        return None
    moment = datetime.fromtimestamp(epoch, UTC)
    spec = "seconds" if float(epoch).is_integer() else "milliseconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class ScheduleRow:
    """One schedule's line.

    Fire times are the ticks' scheduled times (as in the job id); a tick is published ``splay_offset_s``
    later, and ``lateness_s`` is how long after that its publish was confirmed.
    """

    name: str
    cron: str
    timezone: str
    queue: str
    task_type: str
    splay_s: float
    splay_offset_s: float
    misfire_grace_s: float
    next_fire: int | None
    last_fire: int | None
    last_fired_at: float | None
    lateness_s: float | None
    last_instance: str | None
    last_fencing_token: int | None
    missed: int
    leader: str | None
    fencing_token: int | None
    lease_age_s: float | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cron": self.cron,
            "timezone": self.timezone,
            "queue": self.queue,
            "task_type": self.task_type,
            "next_fire": iso(self.next_fire),
            "last_fire": iso(self.last_fire),
            "last_fired_at": iso(self.last_fired_at),
            "lateness_s": self.lateness_s,
            "last_instance": self.last_instance,
            "last_fencing_token": self.last_fencing_token,
            "missed": self.missed,
            "leader": self.leader,
            "fencing_token": self.fencing_token,
            "lease_age_s": self.lease_age_s,
            "splay_s": self.splay_s,
            "splay_offset_s": self.splay_offset_s,
            "misfire_grace_s": self.misfire_grace_s,
            "source": self.source,
        }


@dataclass(frozen=True, slots=True)
class InstanceRow:
    """A cron instance that registered its schedules; ``leader`` when it holds the lease now."""

    instance: str
    last_seen_age_s: float
    leader: bool
    schedules: int

    def to_json(self) -> dict[str, Any]:
        return {
            "instance": self.instance,
            "last_seen_age_s": round(self.last_seen_age_s, 3),
            "leader": self.leader,
            "schedules": self.schedules,
        }


@dataclass(frozen=True, slots=True)
class CronStatus:
    """The whole cron picture at one moment (store clock).

    ``pending_ticks`` are ticks claimed whose publish is not confirmed yet, oldest first: for a moment on
    every tick, for longer when a leader died or the broker or store is down. The token of each says who
    holds it: the leader's own is being published or retried; an earlier token's is left to that publisher
    to mark published, and the leader publishes it again one lock TTL after it first saw it."""

    rows: tuple[ScheduleRow, ...]
    leader: LeaderInfo | None
    fencing_token: int
    instances: tuple[InstanceRow, ...]
    pending_ticks: tuple[TickRecord, ...]
    now: float

    @property
    def pending(self) -> int:
        """How many ticks are claimed and not yet confirmed published."""
        return len(self.pending_ticks)

    def to_json(self) -> dict[str, Any]:
        leader = self.leader
        return {
            "schedules": [row.to_json() for row in self.rows],
            "leader": None
            if leader is None
            else {
                "instance": leader.instance,
                "fencing_token": leader.token,
                "lease_age_s": round(leader.lease_age_s, 3),
                "lease_expires_in_s": round(leader.expires_in_s, 3),
                "renewed_age_s": round(max(0.0, leader.store_time - leader.renewed_at), 3),
            },
            "fencing_token": self.fencing_token,
            "instances": [i.to_json() for i in self.instances],
            "pending_ticks": self.pending,
            "pending_claims": [
                {
                    "id": t.id,
                    "schedule": t.name,
                    "scheduled": iso(t.scheduled),
                    "claimed_by": t.instance or None,
                    "fencing_token": t.token or None,
                }
                for t in self.pending_ticks
            ],
            "time": iso(self.now),
        }


def schedule_rows(
    schedules: Iterable[tuple[Schedule, str]],
    leader: LeaderInfo | None,
    fired: Mapping[str, FiredTick],
    missed: Mapping[str, int],
    now: float,
) -> tuple[ScheduleRow, ...]:
    """The rows for ``(schedule, source)`` pairs as of ``now``, sorted by next fire."""
    rows = []
    for schedule, source in schedules:
        offset = splay_offset(schedule.name, schedule.splay)
        last = fired.get(schedule.name)
        rows.append(
            ScheduleRow(
                name=schedule.name,
                cron=schedule.cron,
                timezone=schedule.timezone,
                queue=schedule.queue,
                task_type=schedule.task_type,
                splay_s=schedule.splay,
                splay_offset_s=offset,
                misfire_grace_s=schedule.misfire_grace,
                next_fire=next_tick(schedule, now - offset),
                last_fire=last.scheduled if last else None,
                last_fired_at=round(last.fired_at, 3) if last else None,
                lateness_s=round(max(0.0, last.fired_at - last.scheduled - offset), 3) if last else None,
                last_instance=last.instance if last else None,
                last_fencing_token=last.token if last else None,
                missed=missed.get(schedule.name, 0),
                leader=leader.instance if leader else None,
                fencing_token=leader.token if leader else None,
                lease_age_s=round(leader.lease_age_s, 3) if leader else None,
                source=source,
            )
        )
    return tuple(sorted(rows, key=lambda r: (r.next_fire or 0, r.name)))


def registered_schedules(registrations: Sequence[Registration]) -> list[Schedule]:
    """Schedules the instances registered, the most recently seen instance's definition winning."""
    chosen: dict[str, Schedule] = {}
    for registration in registrations:  # most recently seen first
        for table in registration.schedules:
            try:
                schedule = schedule_from_mapping(table, f"instance {registration.instance!r}")
            except ScheduleError:
                continue  # written by another version; the file given with --schedule still works
            chosen.setdefault(schedule.name, schedule)
    return list(chosen.values())


def read_status(
    store: CronStore, file_schedules: Sequence[Schedule] = (), *, include_registered: bool = True
) -> CronStatus:
    """Everything the cron screen shows: the file's schedules, plus those running instances registered."""
    now = store.now()
    leader = store.leader()
    registrations = [r for r in store.registrations() if now - r.last_seen <= DEFAULT_FORGET_AFTER_S]
    pairs: list[tuple[Schedule, str]] = [(s, "file") for s in file_schedules]
    if include_registered:
        known = {s.name for s in file_schedules}
        pairs += [(s, "store") for s in registered_schedules(registrations) if s.name not in known]
    rows = schedule_rows(pairs, leader, store.last_fired(), store.missed_counts(), now)
    instances = tuple(
        InstanceRow(
            r.instance,
            max(0.0, now - r.last_seen),
            leader is not None and leader.instance == r.instance,
            len(r.schedules),
        )
        for r in registrations
    )
    return CronStatus(rows, leader, store.fencing_token(), instances, tuple(store.pending()), now)
