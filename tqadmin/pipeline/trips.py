"""The completion store as the worker's rooms call it, each call counted as one round trip.

The heartbeat carries the count (``store_round_trips``: round trips per job is what group commits and shared
starts are for), so every call the worker makes to its store goes through here and none is left uncounted.
A call is counted when it is made, whether or not the store answers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from tqadmin.store.base import Claim, Effect, StateStore
from tqadmin.telemetry.snapshot import WorkerSnapshot


class StoreTrips:
    """``store`` for one worker: its claims are taken as ``owner`` with leases of ``lease_s``."""

    def __init__(self, store: StateStore, *, owner: str, lease_s: float) -> None:
        self._store = store
        self._owner = owner
        self._lease_s = lease_s
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        """Round trips made so far."""
        with self._lock:
            return self._count

    def _trip(self) -> StateStore:
        with self._lock:
            self._count += 1
        return self._store

    def mark_and_claim(
        self, marks: Sequence[Claim], job_ids: Sequence[str]
    ) -> tuple[list[bool], list[Claim]]:
        """Mark ``marks`` done and claim ``job_ids`` in one trip: whether each mark landed, and the claims."""
        return self._trip().complete_and_claim(marks, job_ids, self._owner, self._lease_s)

    def start_many(self, claims: Sequence[Claim]) -> list[bool]:
        return self._trip().start_many(claims)

    def complete(self, claim: Claim, effect: Effect | None) -> bool:
        return self._trip().complete(claim, effect)

    def release(self, claim: Claim, *, forget_crashes: bool = False) -> None:
        self._trip().release(claim, forget_crashes=forget_crashes)

    def renew_many(self, claims: Sequence[Claim]) -> list[bool]:
        return self._trip().renew_many(claims, self._lease_s)

    def beat(self, snapshot: Callable[[], WorkerSnapshot], ttl_s: float) -> None:
        """A heartbeat carrying ``snapshot()``, taken once this trip is counted (so it counts itself)."""
        store = self._trip()
        store.beat(snapshot(), ttl_s)
