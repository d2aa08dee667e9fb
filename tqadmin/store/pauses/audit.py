"""The audit records of pauses: one shape for whoever writes or ends a pause (the CLI, the dashboard, a
worker's breaker, a worker or the cron seeing an expiry), so a record reads the same whoever wrote it.

A pause adds ``who``, ``reason``, ``until``, ``task_type``, ``schedule`` and ``via`` to the audit log's common
fields; a resume also ``paused_by`` and ``paused_for`` (docs/interface.md). An expired pause is recorded once,
as ``action`` ``resume``, ``outcome`` ``expired``, ``who`` ``expiry``, ``reason`` ``resumed by expiry``: by
whoever reaps it first (:func:`reap`; :meth:`~tqadmin.store.pauses.base.PauseStore.reap` hands each expiry to
one caller only), be it a ``pause`` or ``resume`` command, a worker's heartbeat or the cron's leader.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqadmin.files import audit
from tqadmin.store.pauses.base import Pause, PauseStore, iso

EXPIRED = "expired"
BY_EXPIRY = "resumed by expiry"


@dataclass(frozen=True, slots=True)
class PauseAudit:
    """Where the pause records of one profile go: its audit log."""

    path: Path
    profile: str | None

    def record(
        self, action: str, pause: Pause, outcome: str, *, who: str, via: str, by: str | None = None
    ) -> list[str]:
        """Append one record (``action`` ``pause`` or ``resume``); the warnings to show when the audit log
        could not take it (the write itself is done: it is said, not undone)."""
        t = pause.target
        paused = action == "pause"
        extra: dict[str, Any] = {
            "who": "expiry" if by == BY_EXPIRY else who,
            "reason": pause.reason if paused else by or "resumed",
            "until": None if pause.until is None else iso(pause.until),
            "task_type": t.task_type,
            "schedule": t.schedule,
            "via": via,
        }
        if not paused:
            extra["paused_by"], extra["paused_for"] = pause.who, pause.reason
        try:
            audit.append(
                self.path,
                profile=self.profile,
                action=action,
                target=t.schedule if t.schedule is not None else t.queue,
                count=1,
                outcome=outcome,
                extra=extra,
            )
        except OSError as exc:
            return [f"cannot append to the audit log {self.path}: {exc.strerror}"]
        return []

    def expired(self, pause: Pause, via: str) -> list[str]:
        """The one record of a pause that ran out."""
        return self.record("resume", pause, EXPIRED, who="expiry", via=via, by=BY_EXPIRY)


def reap(store: PauseStore, auditor: PauseAudit, via: str) -> tuple[list[Pause], list[str]]:
    """Delete the expired pauses and write each one's end to the audit log: the pauses this caller reaped
    (another caller's are not returned, nor recorded here) and the warnings to show."""
    gone = store.reap()
    warnings: list[str] = []
    for pause in gone:
        warnings += auditor.expired(pause, via)
    return gone, warnings
