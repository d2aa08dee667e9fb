"""Pauses: what on-call has told every tqadmin worker to stop starting, kept in the profile's state store.

One record per target: a queue (``task_type`` None), one task type of a queue, or a schedule. A pause stands
until it is resumed or until its ``until`` passes (``None``: until resumed, which has to be asked for as
``--for forever``). Times are the store's clock (Redis ``TIME``; the host's for SQLite), so every worker on
every host agrees on when a pause ends.

Why an expired pause is *reaped* rather than just ignored: its end is written to the audit log once
("resumed by expiry"), and "once" needs one place that decides which caller saw it go. Readers
(:meth:`PauseStore.standing`) leave expired records alone and simply do not return them; :meth:`reap` deletes
them atomically and returns only what this call deleted, for its caller to audit.
"""

from __future__ import annotations

import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from tqadmin.errors import BadResponse, UsageError

log = logging.getLogger("tqadmin.pauses")
FOREVER = "forever"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> float | None:
    """Seconds of ``30s``, ``10m``, ``2h``, ``1d``, or ``None`` for ``forever``; anything else is a usage
    error that says what is accepted."""
    spoken = text.strip().lower()
    if spoken == FOREVER:
        return None
    found = _DURATION.fullmatch(spoken)
    if found is None or float(found.group(1)) <= 0:
        raise UsageError(
            f"--for {text!r} is not a duration: say how long, as 30s, 10m, 2h or 1d, or --for forever"
        )
    return float(found.group(1)) * _UNIT_S[found.group(2)]


@dataclass(frozen=True, slots=True)
class Target:
    """What a pause stops: a queue, one task type of a queue, or a schedule."""

    queue: str | None = None
    task_type: str | None = None
    schedule: str | None = None

    def __post_init__(self) -> None:
        if (self.queue is None) == (self.schedule is None) or (self.task_type and self.queue is None):
            raise ValueError("a pause targets a queue (with or without a task type) or a schedule")

    @property
    def key(self) -> str:
        """The record's name in the store: the three fields, unambiguous whatever text they hold."""
        return json.dumps([self.queue, self.task_type, self.schedule], separators=(",", ":"))

    @classmethod
    def from_key(cls, key: str) -> Target:
        """The target a record names; :class:`ValueError` for a name no tqadmin wrote."""
        fields = json.loads(key)
        if not isinstance(fields, list) or len(fields) != 3:
            raise ValueError("not a pause target")
        queue, task_type, schedule = (f if f is None else str(f) for f in fields)
        return cls(queue, task_type, schedule)

    def covered_by(self) -> tuple[Target, ...]:
        """The targets whose pause stops this one's work: itself and, for a task type, its whole queue."""
        return (self, Target(self.queue)) if self.task_type is not None else (self,)

    def describe(self) -> str:
        if self.schedule is not None:
            return f"schedule {self.schedule!r}"
        if self.task_type is not None:
            return f"task type {self.task_type!r} of queue {self.queue!r}"
        return f"queue {self.queue!r}"


@dataclass(frozen=True, slots=True)
class Pause:
    """One standing pause; ``since`` and ``until`` are epoch seconds on the store's clock (``until`` None:
    until resumed)."""

    target: Target
    reason: str
    who: str
    since: float
    until: float | None

    def left_s(self, now: float) -> float | None:
        return None if self.until is None else max(self.until - now, 0.0)

    def expired(self, now: float) -> bool:
        return self.until is not None and self.until <= now

    def covers(self, queue: str, task_type: str) -> bool:
        """Whether a job of ``task_type`` taken from ``queue`` must not start."""
        t = self.target
        return t.queue == queue and t.task_type in (None, task_type)

    def left_text(self, now: float) -> str:
        """``forever``, ``45s``, ``3m05s``, ``12m``, ``2h05m``: as long as it takes to judge it."""
        left = self.left_s(now)
        if left is None:
            return FOREVER
        minutes, seconds = divmod(int(left + 0.5), 60)
        hours, minutes = divmod(minutes, 60)
        if hours:
            return f"{hours}h{minutes:02d}m"
        if minutes >= 10:
            return f"{minutes}m"
        return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"

    def describe(self, now: float) -> str:
        """``paused 12m left: <reason>``, as every face shows a pause (the task type said by the caller)."""
        said = "paused until resumed" if self.until is None else f"paused {self.left_text(now)} left"
        return f"{said}: {self.reason}" if self.reason else said

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        """The record of ``tqadmin pauses --json`` (docs/interface.md), times in ISO 8601 UTC."""
        t = self.target
        document: dict[str, Any] = {
            "target": t.schedule if t.schedule is not None else t.queue,
            "queue": t.queue,
            "task_type": t.task_type,
            "schedule": t.schedule,
            "reason": self.reason,
            "who": self.who,
            "since": iso(self.since),
            "until": None if self.until is None else iso(self.until),
        }
        if now is not None:
            document["left_s"] = self.left_s(now)
        return document

    def encode(self) -> str:
        return json.dumps({"reason": self.reason, "who": self.who, "since": self.since, "until": self.until})

    @classmethod
    def decode(cls, key: str, document: str | bytes) -> Pause:
        """The record as :meth:`encode` wrote it; :class:`BadResponse` (exit 4) for one no tqadmin wrote."""
        try:
            fields = json.loads(document)
            until = fields.get("until")
            return cls(
                Target.from_key(key),
                str(fields.get("reason", "")),
                str(fields.get("who", "")),
                float(fields["since"]),
                None if until is None else float(until),
            )
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise unreadable(exc) from None


R = TypeVar("R")


def unreadable(exc: Exception) -> BadResponse:
    return BadResponse(f"the state store holds a pause record tqadmin cannot read ({exc})")


def readable(decode: Callable[[R], Pause], records: Iterable[R]) -> list[Pause]:
    """The records that decode; one that does not is skipped with a warning, so a stray record never hides
    the others from a listing nor stops a worker reading them."""
    pauses = []
    for record in records:
        try:
            pauses.append(decode(record))
        except BadResponse as exc:
            log.warning("%s: skipped", exc)
    return pauses


def of_queue(pauses: Iterable[Pause], queue: str) -> list[Pause]:
    """The pauses of ``queue``: the whole queue's first, then its task types' by name."""
    mine = [p for p in pauses if p.target.queue == queue]
    return sorted(mine, key=lambda p: (p.target.task_type is not None, p.target.task_type or ""))


def iso(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class PauseStore(ABC):
    """The pause set of one profile's state store (one namespace: the store URL's ``prefix``)."""

    url: str

    @abstractmethod
    def pause(self, target: Target, *, reason: str, who: str, for_s: float | None) -> Pause:
        """Pause ``target`` from now (store clock) for ``for_s`` seconds (``None``: until resumed); a pause
        of the same target that stands is replaced. Returns the record written."""

    def pause_unless_paused(
        self, target: Target, *, reason: str, who: str, for_s: float | None
    ) -> Pause | None:
        """Pause ``target`` as :meth:`pause` does unless a pause of it (or of its whole queue) stands: then
        ``None``, nothing written. The stores check and write in one atomic step (two breakers tripping at
        once write one pause); this default reads, then writes."""
        _, standing = self.standing()
        if any(p.target in target.covered_by() for p in standing):
            return None
        return self.pause(target, reason=reason, who=who, for_s=for_s)

    @abstractmethod
    def resume(self, target: Target) -> Pause | None:
        """End the pause of ``target``: the record deleted, ``None`` when there was none. It may turn out
        expired (:meth:`Pause.expired` at :meth:`now`): then it was the expiry that ended it."""

    @abstractmethod
    def now(self) -> float:
        """The store's clock, in epoch seconds."""

    @abstractmethod
    def standing(self) -> tuple[float, list[Pause]]:
        """The store's clock now and the pauses not expired at that time, oldest first; writes nothing."""

    @abstractmethod
    def reap(self) -> list[Pause]:
        """Delete the expired pauses; returns those this call deleted (another caller's are not), so that
        each expiry is audited once."""

    @abstractmethod
    def close(self) -> None:
        """Close connections."""
