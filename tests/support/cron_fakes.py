"""A fake clock and an in-memory CronStore with the Redis store's semantics, for scheduler unit tests."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.errors import Unreachable
from tqadmin.pipeline.job import Job
from tqadmin.store.cron.base import (
    CronStore,
    FiredTick,
    LeaderInfo,
    Lease,
    Registration,
    TickOutcome,
    TickRecord,
    TickState,
)

START = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a whole minute


class FakeClock:
    """Wall and monotonic time that move only when told (or when a scheduler sleeps)."""

    def __init__(self, start: float = START) -> None:
        self.wall = start
        self.mono = 1000.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.wall += seconds
        self.mono += seconds

    def sleep(self, seconds: float, interrupt: threading.Event) -> None:
        self.advance(seconds)


@dataclass
class MemoryCronStore(CronStore):
    """Leases expire on the fake clock; ``down`` makes every call fail like an unreachable Redis.

    ``down_after`` names a method (``"claim_tick"``): its next call does its write and answers, then the
    store goes down, so the caller's next store call fails. ``lose_reply_of`` does the same but the store
    goes down before it answers: the write is done and the caller sees an error. ``retry_after_lost_reply``
    is that reply lost while the driver reconnects at once and sends the call again (redis-py does): the
    caller sees the second call's answer."""

    clock: FakeClock
    namespace: str = "test"
    down: bool = False
    down_after: str | None = None
    lose_reply_of: str | None = None
    retry_after_lost_reply: str | None = None
    lease_value: tuple[int, str] | None = None
    lease_expires: float = 0.0
    acquired_at: float = 0.0
    renewed_at: float = 0.0
    fence: int = 0
    ticks: dict[tuple[str, int], TickRecord] = field(default_factory=dict)
    pending_ticks: set[tuple[str, int]] = field(default_factory=set)
    cursor: dict[str, int] = field(default_factory=dict)
    fired: dict[str, FiredTick] = field(default_factory=dict)
    missed: dict[str, int] = field(default_factory=dict)
    registry: dict[str, tuple[float, tuple[Mapping[str, Any], ...]]] = field(default_factory=dict)

    def _check(self) -> None:
        if self.down:
            raise Unreachable("cannot reach state store memory://")
        if self.lease_value is not None and self.clock.time() >= self.lease_expires:
            self.lease_value = None

    def _fall(self, method: str) -> None:
        """Go down after ``method``'s write if told to, losing its reply if told to."""
        if self.down_after == method:
            self.down_after, self.down = None, True
        if self.lose_reply_of == method:
            self.lose_reply_of, self.down = None, True
            raise Unreachable("cannot reach state store memory:// (connection lost while reading the reply)")

    def _current(self, lease: Lease) -> bool:
        return self.lease_value == (lease.token, lease.instance) and self.fence == lease.token

    def acquire(self, instance: str, ttl_s: float) -> Lease | None:
        self._check()
        if self.lease_value is not None:
            return None
        self.fence += 1
        self.lease_value = (self.fence, instance)
        self.lease_expires = self.clock.time() + ttl_s
        self.acquired_at = self.renewed_at = self.clock.time()
        return Lease(instance, self.fence, ttl_s)

    def renew(self, lease: Lease) -> bool:
        self._check()
        if self.lease_value != (lease.token, lease.instance):
            return False
        self.lease_expires = self.clock.time() + lease.ttl_s
        self.renewed_at = self.clock.time()
        return True

    def release(self, lease: Lease) -> None:
        self._check()
        if self.lease_value == (lease.token, lease.instance):
            self.lease_value = None

    def leader(self) -> LeaderInfo | None:
        self._check()
        if self.lease_value is None:
            return None
        token, instance = self.lease_value
        now = self.clock.time()
        return LeaderInfo(instance, token, self.acquired_at, self.renewed_at, self.lease_expires - now, now)

    def fencing_token(self) -> int:
        self._check()
        return self.fence

    def claim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        self._check()
        if not self._current(lease):
            return TickOutcome.STALE
        if self.retry_after_lost_reply == "claim_tick":  # the first call's write is done, its reply lost...
            self.retry_after_lost_reply = None
            self.claim_tick(lease, name, scheduled, keep_s)  # ...and the driver sends it again
        mine = TickRecord(name, scheduled, TickState.CLAIMED, lease.token, lease.instance)
        if (name, scheduled) in self.ticks:
            return TickOutcome.DUPLICATE
        self.ticks[(name, scheduled)] = mine
        self.pending_ticks.add((name, scheduled))
        self._fall("claim_tick")
        return TickOutcome.CLAIMED

    def reclaim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        self._check()
        if not self._current(lease):
            return TickOutcome.STALE
        if (name, scheduled) not in self.pending_ticks:
            return TickOutcome.DUPLICATE
        self.ticks[(name, scheduled)] = TickRecord(
            name, scheduled, TickState.CLAIMED, lease.token, lease.instance
        )
        return TickOutcome.CLAIMED

    def mark_fired(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> None:
        self._check()
        current = self.ticks.get((name, scheduled))
        if current is None or current.token <= lease.token:
            self.ticks[(name, scheduled)] = TickRecord(
                name, scheduled, TickState.FIRED, lease.token, lease.instance
            )
        self.pending_ticks.discard((name, scheduled))
        self.cursor[name] = max(self.cursor.get(name, -1), scheduled)
        last = self.fired.get(name)
        if last is None or scheduled > last.scheduled:
            self.fired[name] = FiredTick(name, scheduled, self.clock.time(), lease.token, lease.instance)
        self._fall("mark_fired")

    def mark_missed(self, lease: Lease, name: str, through: int, count: int) -> bool:
        self._check()
        if not self._current(lease):
            return False
        self.missed[name] = self.missed.get(name, 0) + count
        self.cursor[name] = max(self.cursor.get(name, -1), through)
        return True

    def arm(self, name: str, cursor: int) -> int:
        self._check()
        return self.cursor.setdefault(name, cursor)

    def cursors(self, names: Iterable[str]) -> dict[str, int]:
        self._check()
        return {n: self.cursor[n] for n in names if n in self.cursor}

    def pending(self) -> list[TickRecord]:
        self._check()
        return [self.ticks[k] for k in sorted(self.pending_ticks, key=lambda k: k[1])]

    def drop_pending(self, name: str, scheduled: int) -> None:
        self.pending_ticks.discard((name, scheduled))

    def tick(self, name: str, scheduled: int) -> TickRecord | None:
        return self.ticks.get((name, scheduled))

    def last_fired(self) -> dict[str, FiredTick]:
        self._check()
        return dict(self.fired)

    def missed_counts(self) -> dict[str, int]:
        self._check()
        return dict(self.missed)

    def register(self, instance: str, schedules: Iterable[Mapping[str, Any]]) -> None:
        self._check()
        self.registry[instance] = (self.clock.time(), tuple(schedules))

    def heartbeat(self, instance: str) -> None:
        self._check()
        _, schedules = self.registry.get(instance, (0.0, ()))
        self.registry[instance] = (self.clock.time(), schedules)

    def registrations(self) -> list[Registration]:
        self._check()
        rows = [Registration(i, seen, s) for i, (seen, s) in self.registry.items()]
        return sorted(rows, key=lambda r: -r.last_seen)

    def forget_instances(self, seen_before: float) -> int:
        stale = [i for i, (seen, _) in self.registry.items() if seen < seen_before]
        for instance in stale:
            del self.registry[instance]
        return len(stale)

    def now(self) -> float:
        self._check()
        return self.clock.time()

    def close(self) -> None:
        pass


class Recorder:
    """A publish function that records (queue, job) and can be told to fail like a broker that is down.

    ``on_server`` is a store the broker shares a server with (a Redis both broker and state store): while
    that store is down, publishing fails too. ``then`` runs once, after the next confirmed publish (a fault
    to inject right there)."""

    def __init__(self, on_server: MemoryCronStore | None = None, clock: FakeClock | None = None) -> None:
        self.published: list[tuple[str, Job]] = []
        self.published_at: list[float] = []  # the fake time of each publish, when given a clock
        self._clock = clock
        self.failing = False
        self.on_server = on_server
        self.then: Callable[[], None] | None = None

    def __call__(self, queue: str, job: Job) -> None:
        if self.failing or (self.on_server is not None and self.on_server.down):
            raise Unreachable("cannot reach broker amqp://127.0.0.1:5672")
        self.published.append((queue, job))
        if self._clock is not None:
            self.published_at.append(self._clock.time())
        if self.then is not None:
            then, self.then = self.then, None
            then()

    @property
    def ids(self) -> list[str]:
        return [job.id for _, job in self.published]
