"""The cron's shared state, independent of the store engine: a leader lease with fencing, and tick records.

Why a fencing token and not just a lease: a leader paused (GC, SIGSTOP, a VM migration) past its lease wakes
up believing it still leads. Every acquisition takes a token from a counter that only grows, and a tick can be
claimed only by the holder of the lease *with the current token*, checked in the same atomic step that records
the tick. A stale leader's claims fail, so it fires nothing new.

A tick's life: ``claim_tick`` records ``cron:<name>:<epoch>`` as *claimed* (and lists it as pending), the
scheduler publishes the job with confirmation, then ``mark_fired`` records it as *fired*. A leader that dies
between the two leaves the tick pending; the next leader ``reclaim_tick``s and publishes it again. The job
id is the same, so at worst a dedup'ing worker sees a duplicate, and no tick is ever lost.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tqadmin.errors import UsageError


def tick_id(name: str, scheduled: int) -> str:
    """The job id of one tick (docs/interface.md), also the name of its dedup record."""
    return f"cron:{name}:{scheduled}"


@dataclass(frozen=True, slots=True)
class Lease:
    """A held leadership: who, with which fencing token, for how long each acquire or renew lasts."""

    instance: str
    token: int
    ttl_s: float


@dataclass(frozen=True, slots=True)
class LeaderInfo:
    """The current leader as the store sees it; times are the store's clock, in epoch seconds."""

    instance: str
    token: int
    acquired_at: float
    renewed_at: float
    expires_in_s: float
    store_time: float

    @property
    def lease_age_s(self) -> float:
        """How long this instance has led (since it acquired the lease)."""
        return max(0.0, self.store_time - self.acquired_at)


class TickOutcome(StrEnum):
    CLAIMED = "claimed"  # the caller must publish this tick now, then mark it fired
    DUPLICATE = "duplicate"  # already claimed or fired by someone: skip it
    STALE = "stale"  # the caller's token is not current: it no longer leads and must fire nothing


class TickState(StrEnum):
    CLAIMED = "claimed"
    FIRED = "fired"


@dataclass(frozen=True, slots=True)
class TickRecord:
    """One tick as recorded: claimed (publish in progress, or its leader died) or fired, by whom."""

    name: str
    scheduled: int
    state: TickState
    token: int
    instance: str

    @property
    def id(self) -> str:
        return tick_id(self.name, self.scheduled)


@dataclass(frozen=True, slots=True)
class FiredTick:
    """The latest fired tick of a schedule; ``fired_at`` is when its publish was confirmed (store clock)."""

    name: str
    scheduled: int
    fired_at: float
    token: int
    instance: str


@dataclass(frozen=True, slots=True)
class Registration:
    """What one cron instance said it runs, and when it was last seen alive (store clock)."""

    instance: str
    last_seen: float
    schedules: tuple[Mapping[str, Any], ...]


class CronStore(ABC):
    """Leader lease, fencing tokens and tick records of one cron namespace (one set of schedules)."""

    namespace: str

    @abstractmethod
    def acquire(self, instance: str, ttl_s: float) -> Lease | None:
        """Take the lease if nobody holds it, with a new fencing token; ``None`` when someone does."""

    @abstractmethod
    def renew(self, lease: Lease) -> bool:
        """Extend the lease by its TTL only if ``lease`` is still the one stored (compare and set)."""

    @abstractmethod
    def release(self, lease: Lease) -> None:
        """Give the lease up if still held, so another instance takes over without waiting for the TTL."""

    @abstractmethod
    def leader(self) -> LeaderInfo | None:
        """The live leader, or ``None`` when the lease is free."""

    @abstractmethod
    def fencing_token(self) -> int:
        """The latest token handed out (0 before the first); it never goes backwards."""

    @abstractmethod
    def claim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        """Record the tick as claimed if ``lease`` holds the current token and the tick is new, atomically.

        The record is kept ``keep_s`` seconds, long enough for any leader to still see it as taken."""

    @abstractmethod
    def reclaim_tick(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> TickOutcome:
        """Take over a tick that was claimed but never marked fired (its publisher died or failed)."""

    @abstractmethod
    def mark_fired(self, lease: Lease, name: str, scheduled: int, keep_s: float) -> None:
        """Record that the tick's job was published and confirmed; advances the schedule's cursor.

        Allowed with a stale token too: the publish happened, and saying so only prevents a re-publish."""

    @abstractmethod
    def mark_missed(self, lease: Lease, name: str, through: int, count: int) -> bool:
        """Count ``count`` ticks up to ``through`` as missed and advance the cursor, if ``lease`` is current;
        ``False`` (nothing written) when it is not."""

    @abstractmethod
    def arm(self, name: str, cursor: int) -> int:
        """Set the schedule's cursor (last handled tick) unless it has one; return the stored cursor."""

    @abstractmethod
    def cursors(self, names: Iterable[str]) -> dict[str, int]:
        """The cursor of each named schedule that has one."""

    @abstractmethod
    def pending(self) -> list[TickRecord]:
        """Ticks claimed but not marked fired, oldest first."""

    @abstractmethod
    def drop_pending(self, name: str, scheduled: int) -> None:
        """Stop listing a pending tick (one whose schedule is gone and whose record has expired)."""

    @abstractmethod
    def tick(self, name: str, scheduled: int) -> TickRecord | None:
        """The record of one tick while it is kept."""

    @abstractmethod
    def last_fired(self) -> dict[str, FiredTick]:
        """The latest fired tick of every schedule that fired."""

    @abstractmethod
    def missed_counts(self) -> dict[str, int]:
        """How many ticks of each schedule were skipped as older than their grace."""

    @abstractmethod
    def register(self, instance: str, schedules: Iterable[Mapping[str, Any]]) -> None:
        """Store what ``instance`` runs, so ``tqadmin schedules`` works without the schedule file."""

    @abstractmethod
    def heartbeat(self, instance: str) -> None:
        """Note that ``instance`` is alive."""

    @abstractmethod
    def registrations(self) -> list[Registration]:
        """Every registered instance, most recently seen first."""

    @abstractmethod
    def forget_instances(self, seen_before: float) -> int:
        """Drop registrations of instances not seen since ``seen_before`` (store clock); how many."""

    @abstractmethod
    def now(self) -> float:
        """The store's clock, in epoch seconds (lease ages are measured on it, never on a local clock)."""

    @abstractmethod
    def close(self) -> None:
        """Close connections."""


def check_namespace(namespace: str) -> str:
    """Namespaces become part of key names and hash tags; refuse what would break either."""
    if not namespace or any(c in namespace for c in "{}: ") or len(namespace) > 100:
        raise UsageError(
            f"cron namespace {namespace!r} must be 1-100 characters without '{{', '}}', ':' or space"
        )
    return namespace
