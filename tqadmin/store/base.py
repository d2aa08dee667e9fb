"""What the worker and cron need from shared state, independent of Redis or SQLite.

Why fencing tokens: a lease alone cannot stop a worker that was paused (GC, SIGSTOP, a VM migration) past its
lease from waking up and committing after another worker took the job over. Every claim gets a token from a
counter that only grows; a commit is accepted only with the token that is current at commit time, checked
atomically with the write (Kleppmann, "How to do distributed locking").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ClaimState(StrEnum):
    CLAIMED = "claimed"  # the caller holds the job now
    DONE = "done"  # completed before: ack the duplicate without running it
    HELD = "held"  # another worker's lease is live: retry after ``retry_after_s``


@dataclass(frozen=True, slots=True)
class Claim:
    """The outcome of :meth:`CompletionStore.claim`.

    ``crashes`` counts how many earlier claims of this job expired without a commit or a release: each is a
    worker that died (or hung) while running it, which is how a poison job that kills its worker is detected.
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

    @abstractmethod
    def renew(self, claim: Claim, lease_s: float) -> bool:
        """Extend the lease; ``False`` when the token is no longer current (the job was taken over)."""

    @abstractmethod
    def complete(self, claim: Claim, effect: Callable[[Any], None] | None = None) -> bool:
        """Mark the job done, committing ``effect(tx)`` in the same atomic step, only if ``claim.token`` is
        still current; ``False`` (and nothing written) otherwise."""

    @abstractmethod
    def release(self, claim: Claim) -> None:
        """Give the job up without completing it (it will be retried); not counted as a crash."""

    @abstractmethod
    def done_among(self, job_ids: Iterable[str]) -> set[str]:
        """Which of these jobs are marked done (for ``replay --skip-done`` and the demo's checks)."""

    @abstractmethod
    def close(self) -> None:
        """Close connections."""
