"""Pause and resume: the write side of the pause set, with its audit records, for both faces.

A pause is a write like a purge: refused by a read-only profile (exit 6) and when its audit record could not
be kept, confirmed, and recorded in the audit log with who, why and until when (docs/pause.md). Another
framework's queue is never paused by tqadmin (its workers would not read tqadmin's pause set anyway): the
refusal names that framework's own way to stop its work (:func:`refuse_foreign`).

Expired pauses are reaped before every pause and resume, each expiry written once as
``{"action": "resume", "outcome": "expired", "reason": "resumed by expiry"}``
(:meth:`~tqadmin.store.pauses.PauseStore.reap` hands an expiry to one caller only).
"""

from __future__ import annotations

import getpass
import os
import socket
from typing import Any

from tqadmin import audit
from tqadmin.config import Settings
from tqadmin.errors import QueueReadOnly
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.store.pauses import Pause, PauseStore, Target, iso

EXPIRED = "expired"
BY_EXPIRY = "resumed by expiry"
# How each framework stops its own workers taking a queue's work (what tqadmin's refusal names).
FRAMEWORK_PAUSE = {
    "Celery": "`celery -A APP control cancel_consumer QUEUE` stops its workers consuming the queue"
    " (`add_consumer` starts them again)",
    "RQ": "`rq suspend` stops RQ's workers taking jobs (`rq resume` lets them go on)",
    "Sidekiq": "Sidekiq Enterprise pauses a queue: `Sidekiq::Queue.new(NAME).pause!` (`.unpause!`), or"
    " its Web UI",
    "Dramatiq": "Dramatiq has no pause: stop the workers that consume the queue",
}


def operator() -> str:
    """Who pauses: ``TQADMIN_USER`` when set (a shared account's real person), else ``user@host``."""
    named = os.environ.get("TQADMIN_USER", "").strip()
    if named:
        return named
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def refuse_foreign(admin: BrokerAdmin, action: str, queue: str) -> None:
    """Refuse (exit 6) pausing a queue another framework owns, naming that framework's own pause."""
    try:
        admin.require_writable(action, queue)
    except QueueReadOnly as refusal:
        raise QueueReadOnly(queue, foreign_reason(queue, refusal.reason), action) from None


def foreign_reason(queue: str, read_only: str) -> str:
    """Why a queue the broker shows read-only (``read_only``: its reason) is not paused by tqadmin, with the
    framework's own way to stop its work where it is known."""
    said = f"{read_only} {queue.split(':', maxsplit=1)[0]}".lower()
    own = next((way for name, way in FRAMEWORK_PAUSE.items() if name.lower() in said), None)
    if own is None:
        return read_only
    return f"{read_only.split(';', maxsplit=1)[0]}; its workers never read tqadmin's pauses: {own}"


def pause(
    settings: Settings, store: PauseStore, target: Target, *, reason: str, for_s: float | None, via: str
) -> tuple[Pause, list[str]]:
    """Write the pause (replacing one of the same target) and its audit record; the warnings to show."""
    warnings = reap(settings, store, via)
    written = store.pause(target, reason=reason, who=operator(), for_s=for_s)
    warnings += _audit(settings, "pause", written, "ok", via)
    return written, warnings


def resume(
    settings: Settings, store: PauseStore, target: Target, *, via: str
) -> tuple[Pause | None, list[str]]:
    """End the pause of ``target``: the pause that stood (``None`` when none did, or it had expired)."""
    warnings = reap(settings, store, via)
    ended = store.resume(target)
    if ended is None:
        return None, warnings
    if ended.expired(store.now()):
        return None, warnings + _audit(settings, "resume", ended, EXPIRED, via, by=BY_EXPIRY)
    return ended, warnings + _audit(settings, "resume", ended, "ok", via)


def reap(settings: Settings, store: PauseStore, via: str) -> list[str]:
    """Delete the expired pauses and write each one's end to the audit log."""
    warnings: list[str] = []
    for gone in store.reap():
        warnings += _audit(settings, "resume", gone, EXPIRED, via, by=BY_EXPIRY)
    return warnings


def _audit(
    settings: Settings, action: str, pause: Pause, outcome: str, via: str, *, by: str | None = None
) -> list[str]:
    """One audit record: the common fields, then who, why, until when, and what exactly was paused."""
    t = pause.target
    paused = action == "pause"
    extra: dict[str, Any] = {
        "who": "expiry" if by == BY_EXPIRY else operator(),
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
            settings.audit_log,
            profile=settings.profile,
            action=action,
            target=t.schedule if t.schedule is not None else t.queue,
            count=1,
            outcome=outcome,
            extra=extra,
        )
    except OSError as exc:
        return [f"cannot append to the audit log {settings.audit_log}: {exc.strerror}"]
    return []
