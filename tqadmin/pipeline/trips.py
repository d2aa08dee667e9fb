"""The completion store as the worker's rooms call it, each call counted as one round trip.

The heartbeat carries the count (``store_round_trips``: round trips per job is what group commits and shared
starts are for), so every call the worker makes to its store goes through here and none is left uncounted.
A call is counted when it is made, whether or not the store answers. Being the one way in and out of a claim,
it also keeps the worker's :class:`~tqadmin.pipeline.claim_register.ClaimRegister` (when it has one) in step:
every claim taken is written there, every claim given up (completed, released) is wiped, so a supervisor whose
worker process died gives up in the store what that process still held.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from tqadmin.pipeline.claim_register import ClaimRegister
from tqadmin.store.completion.base import Claim, ClaimState, Effect, StateStore
from tqadmin.telemetry.snapshot import WorkerSnapshot


class StoreTrips:
    """``store`` for one worker: its claims are taken as ``owner`` with leases of ``lease_s``, and written in
    ``register`` while they are held (None: a worker without a supervisor)."""

    def __init__(
        self, store: StateStore, *, owner: str, lease_s: float, register: ClaimRegister | None = None
    ) -> None:
        self._store = store
        self._owner = owner
        self._lease_s = lease_s
        self._register = register
        self._lock = threading.Lock()
        self._count = 0

    @property
    def owner(self) -> str:
        """Whose claims these are (``host:pid``): a claim ``HELD`` by it is held by this worker process."""
        return self._owner

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
        try:
            done, claims = self._trip().complete_and_claim(marks, job_ids, self._owner, self._lease_s)
        finally:
            self._given_up(marks)
        if self._register is not None:
            for claim in claims:
                if claim.state is ClaimState.CLAIMED:
                    self._register.hold(claim.job_id, claim.token)
        return done, claims

    def start_many(self, claims: Sequence[Claim]) -> list[bool]:
        return self._trip().start_many(claims)

    def complete(self, claim: Claim, effect: Effect | None) -> bool:
        try:
            return self._trip().complete(claim, effect)
        finally:
            self._given_up([claim])

    def release(self, claim: Claim, *, forget_crashes: bool = False) -> None:
        try:
            self._trip().release(claim, forget_crashes=forget_crashes)
        finally:
            self._given_up([claim])

    def _given_up(self, claims: Sequence[Claim]) -> None:
        """Wipe ``claims`` from the register, whatever the store answered: given up, superseded, or (the store
        away) left to their leases, none is this process's to hand back any more."""
        if self._register is not None:
            for claim in claims:
                self._register.drop(claim.job_id, claim.token)

    def renew_many(self, claims: Sequence[Claim]) -> list[bool]:
        return self._trip().renew_many(claims, self._lease_s)

    def beat(self, snapshot: Callable[[], WorkerSnapshot], ttl_s: float) -> None:
        """A heartbeat carrying ``snapshot()``, taken once this trip is counted (so it counts itself)."""
        store = self._trip()
        store.beat(snapshot(), ttl_s)
