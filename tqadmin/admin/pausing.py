"""Pause and resume: the write side of the pause set, with its audit records, for both faces.

A pause is a write like a purge: refused by a read-only profile (exit 6) and when its audit record could not
be kept, confirmed, and recorded in the audit log with who, why and until when (docs/pause.md). Another
framework's queue is never paused by tqadmin (its workers would not read tqadmin's pause set anyway): the
refusal names that framework's own way to stop its work (:func:`refuse_foreign`).

Expired pauses are reaped before every pause and resume, each expiry written once as
``{"action": "resume", "outcome": "expired", "reason": "resumed by expiry"}``
(:meth:`~tqadmin.store.pauses.base.PauseStore.reap` hands an expiry to one caller only).
"""

from __future__ import annotations

import getpass
import os
import socket

from tqadmin.config import Settings
from tqadmin.errors import QueueReadOnly
from tqadmin.plugin.base import BrokerAdmin
from tqadmin.store.pauses import audit as pause_audit
from tqadmin.store.pauses.audit import PauseAudit
from tqadmin.store.pauses.base import Pause, PauseStore, Target

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
    auditor = auditor_of(settings)
    warnings = reap(settings, store, via)
    written = store.pause(target, reason=reason, who=operator(), for_s=for_s)
    warnings += auditor.record("pause", written, "ok", who=operator(), via=via)
    return written, warnings


def resume(
    settings: Settings, store: PauseStore, target: Target, *, via: str
) -> tuple[Pause | None, list[str]]:
    """End the pause of ``target``: the pause that stood (``None`` when none did, or it had expired)."""
    auditor = auditor_of(settings)
    warnings = reap(settings, store, via)
    ended = store.resume(target)
    if ended is None:
        return None, warnings
    if ended.expired(store.now()):
        return None, warnings + auditor.expired(ended, via)
    return ended, warnings + auditor.record("resume", ended, "ok", who=operator(), via=via)


def reap(settings: Settings, store: PauseStore, via: str) -> list[str]:
    """Delete the expired pauses and write each one's end to the audit log."""
    return pause_audit.reap(store, auditor_of(settings), via)[1]


def auditor_of(settings: Settings) -> PauseAudit:
    """Where the profile's pause records go."""
    return PauseAudit(settings.audit_log, settings.profile)
