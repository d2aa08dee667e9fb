"""Requests to fire one tick of a schedule now (``tqadmin trigger``), kept in the state store for the cron's
leader to take.

Why a request and not a publish by the command: a tick is fired by the leader alone, claimed under its
fencing token in the same atomic step that records it, so a trigger is fenced like every tick (a stale leader
fires nothing) and recorded where ``tqadmin schedules`` reads. The command writes the request; the leader
claims it as the tick ``<name>:trigger`` number ``ident`` (job id ``cron:<name>:trigger:<ident>``: never a
regular tick's id, since a schedule's name holds no ``:``), publishes it, marks it fired, and only then drops
the request. A leader that dies between the claim and the drop leaves the request, and the next leader
finishes it under the same job id (a duplicate at worst, which dedup absorbs; never a loss).

``ident`` is the store's clock in microseconds when the request was written: unique in practice, and readable.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

TRIGGER = "trigger"


def trigger_tick_name(schedule: str) -> str:
    """The name a trigger's tick is claimed and recorded under: ``<schedule>:trigger``."""
    return f"{schedule}:{TRIGGER}"


@dataclass(frozen=True, slots=True)
class TriggerRequest:
    """One asked-for tick of ``schedule``, numbered ``ident`` (store clock, microseconds), by ``who``."""

    schedule: str
    ident: int
    who: str

    @property
    def tick_name(self) -> str:
        return trigger_tick_name(self.schedule)

    @property
    def job_id(self) -> str:
        return f"cron:{self.tick_name}:{self.ident}"


class TriggerRequests(ABC):
    """The trigger requests of one cron namespace."""

    @abstractmethod
    def request(self, schedule: str, who: str) -> TriggerRequest:
        """Write a request for one tick of ``schedule`` now."""

    @abstractmethod
    def waiting(self) -> list[TriggerRequest]:
        """The requests not yet done, oldest first."""

    @abstractmethod
    def done(self, request: TriggerRequest) -> None:
        """Drop ``request``: its tick is fired (or it cannot be, and was said so)."""

    @abstractmethod
    def close(self) -> None:
        """Close connections."""
