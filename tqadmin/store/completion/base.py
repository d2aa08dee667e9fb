"""What the worker and cron need from shared state, independent of Redis or SQLite.

Why fencing tokens: a lease alone cannot stop a worker that was paused (GC, SIGSTOP, a VM migration) past its
lease from waking up and committing after another worker took the job over. Every claim gets a token from a
counter that only grows; a commit is accepted only with the token that is current at commit time, checked
atomically with the write (Kleppmann, "How to do distributed locking").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, TypeAlias

from tqadmin.telemetry.snapshot import DEAD_WORKER_KEEP_S, WorkerHistory, WorkerSnapshot

if TYPE_CHECKING:  # the drivers' types, named for the type checker only: neither is imported here
    import sqlite3

    from redis.client import Pipeline

Transaction: TypeAlias = "Pipeline | sqlite3.Connection"
"""What ``fn(tx)`` of ``ctx.once`` receives: the store's own transaction, a Redis pipeline in ``MULTI``
(:class:`~tqadmin.store.completion.redis.RedisStore`) or an SQLite connection inside the completion's
transaction (:class:`~tqadmin.store.completion.sqlite.SQLiteStore`). :mod:`tqadmin.store.completion.effects`
writes the common effects for both."""

Effect: TypeAlias = Callable[[Transaction], None]
"""``fn(tx)``, committed with a completion mark in the same atomic step."""


class ClaimState(StrEnum):
    CLAIMED = "claimed"  # the caller holds the job now
    DONE = "done"  # completed before: ack the duplicate without running it
    HELD = "held"  # another worker's lease is live: retry after ``retry_after_s``


@dataclass(frozen=True, slots=True)
class Claim:
    """The outcome of :meth:`CompletionStore.claim`.

    ``crashes`` counts how many earlier claims of this job expired *started* (see
    :meth:`CompletionStore.start`) without a commit or a release: each is a worker that died (or hung) while
    running it, which is how a poison job that kills its worker is detected. A claim that expires unstarted
    (its job waited in a worker's prefetch window) is no crash: the job never ran.
    """

    job_id: str
    state: ClaimState
    owner: str = ""
    token: int = 0
    crashes: int = 0
    retry_after_s: float = 0.0


class CompletionStore(ABC):
    """Claims with leases and fencing tokens, and completion marks, for exactly-once effects."""

    @abstractmethod
    def claim(self, job_id: str, owner: str, lease_s: float) -> Claim:
        """Take the job for ``owner`` unless it is done or someone else's lease on it is live."""

    def start(self, claim: Claim) -> bool:
        """Record that the run of the claimed job starts now, before it does, so that the claim expiring from
        here on counts a crash; ``False`` when the token is no longer current (do not run it)."""
        return self.start_many([claim])[0]

    @abstractmethod
    def start_many(self, claims: Sequence[Claim]) -> list[bool]:
        """:meth:`start` for each claim, in one round trip (the job threads' starts sent together)."""

    @abstractmethod
    def renew(self, claim: Claim, lease_s: float) -> bool:
        """Extend the lease; ``False`` when the token is no longer current (the job was taken over)."""

    @abstractmethod
    def complete(self, claim: Claim, effect: Effect | None = None) -> bool:
        """Mark the job done, committing ``effect(tx)`` in the same atomic step, only if ``claim.token`` is
        still current; ``False`` (and nothing written) otherwise. An exception raised by ``effect`` while it
        builds the transaction propagates and nothing is written."""

    @abstractmethod
    def release(self, claim: Claim, *, forget_crashes: bool = False) -> bool:
        """Give the job up without completing it (it will be retried); not counted as a crash.

        ``forget_crashes`` resets the crash count, for a job that is being dead-lettered (so a replay of it
        starts afresh). ``False`` when the token is no longer current (nothing changed)."""

    @abstractmethod
    def abandon_many(self, claims: Sequence[Claim], *, started: bool) -> list[bool]:
        """The holder of ``claims`` is gone (its process died): give each up now, if its token is still
        current, rather than let its lease run out while its redelivered job waits ``HELD``. With ``started``
        (their runs were under way) each lease ends now as if it had run out, so the job's next claim counts
        the crash at once; without, each is released as :meth:`release` does (no crash: its run had not
        started, or its task had returned). ``False`` for a claim no longer current (nothing changed)."""

    @abstractmethod
    def done_among(self, job_ids: Iterable[str]) -> set[str]:
        """Which of these jobs are marked done (for ``replay --skip-done`` and the demo's checks)."""

    # Batches: same semantics as one call per item, in order, but a store may send them in one round trip
    # (Redis pipelines them), which is what lets a worker with a prefetch window keep up with the broker.

    def claim_many(self, job_ids: Sequence[str], owner: str, lease_s: float) -> list[Claim]:
        return [self.claim(job_id, owner, lease_s) for job_id in job_ids]

    def renew_many(self, claims: Sequence[Claim], lease_s: float) -> list[bool]:
        return [self.renew(claim, lease_s) for claim in claims]

    def complete_many(self, claims: Sequence[Claim]) -> list[bool]:
        """Complete claims that carry no effect (effects need their own transaction: use ``complete``)."""
        return [self.complete(claim) for claim in claims]

    def complete_and_claim(
        self, claims: Sequence[Claim], job_ids: Sequence[str], owner: str, lease_s: float
    ) -> tuple[list[bool], list[Claim]]:
        """``complete_many(claims)`` then ``claim_many(job_ids, ...)``: a worker marks the jobs it just ran
        done and claims the ones it is about to run in one round trip (Redis: one script call for all of them
        on one server, a pipeline per master on a cluster; SQLite: one transaction)."""
        return self.complete_many(claims), self.claim_many(job_ids, owner, lease_s)

    @abstractmethod
    def close(self) -> None:
        """Close connections."""


@dataclass(frozen=True, slots=True)
class Retention:
    """How long a store keeps things; memory and disk stay flat over days.

    ``job_s``: a job's record (done mark, crash count) after its last change; a duplicate delivered later than
    that runs again. ``history_step_s`` and ``history_cap``: a worker's snapshot is added to its history at
    most every step, and the newest ``cap`` are kept (an hour by default). ``dead_worker_s``: how long a
    worker that stopped beating is still listed.
    """

    job_s: float = 7 * 24 * 3600
    history_step_s: float = 5.0
    history_cap: int = 720
    dead_worker_s: float = DEAD_WORKER_KEEP_S


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A worker as the store last heard of it: its latest snapshot, the heartbeat's age by the store's
    clock, and whether that age is within the TTL the worker promised with its beat."""

    snapshot: WorkerSnapshot
    age_s: float
    alive: bool


class HeartbeatStore(ABC):
    """Worker heartbeats carrying telemetry snapshots, and a bounded history of them for windows."""

    @abstractmethod
    def beat(self, snapshot: WorkerSnapshot, ttl_s: float) -> None:
        """Record that the worker is alive now; it promises another beat within ``ttl_s``.

        A worker stopping cleanly beats once more with ``ttl_s`` 0 so it is listed as gone at once."""

    @abstractmethod
    def workers(self) -> list[WorkerRecord]:
        """Live workers and those dead recently (kept for ``dead_retention_s``), oldest-started first."""

    @abstractmethod
    def history(self, window_s: float) -> tuple[float, list[WorkerHistory]]:
        """The store's clock now, and for every worker that beat within the last ``window_s`` its latest
        reading and baseline; O(workers) reads, however long the window."""


def unique_chunks(job_ids: Iterable[str], size: int) -> Iterator[list[str]]:
    """The ids without repeats, in slices of ``size``, for stores that look many up in one request."""
    ids = list(dict.fromkeys(job_ids))
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def by_start(records: Iterable[WorkerRecord]) -> list[WorkerRecord]:
    """Workers in the order they started (the listing order of ``workers``)."""
    return sorted(records, key=lambda r: (r.snapshot.started_at, r.snapshot.worker_id))


class StateStore(CompletionStore, HeartbeatStore, ABC):
    """Everything a worker needs of shared state; :func:`tqadmin.store.open_store` returns one."""

    url: str

    def check(self) -> None:
        """Raise a :class:`tqadmin.errors.ConnectError` now if the store cannot be reached, so a long-running
        process fails at start rather than at its first job (network stores connect lazily)."""
