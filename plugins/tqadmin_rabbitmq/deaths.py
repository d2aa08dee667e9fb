"""Where a message RabbitMQ dead-lettered came from: its ``x-death`` header, read as DeathRecords.

RabbitMQ adds ``x-death`` (newest entry first) and the ``x-first-death-*`` / ``x-last-death-*`` headers when
it dead-letters a message itself: rejected without requeue, expired, over a length or delivery limit. Driver-
free, so the listing, the admin face and the consumer can all read it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from tqadmin.plugin.models import DeathRecord, Message

X_DEATH = "x-death"
BROKER_HEADERS = frozenset(
    {
        X_DEATH,
        *(f"x-{w}-death-{f}" for w in ("first", "last") for f in ("exchange", "queue", "reason")),
    }
)
"""Headers RabbitMQ writes when it dead-letters a message; they grow with every trip through a delay queue."""

_SHOWN = ("exchange", "routing-keys", "original-expiration")


def deaths(message: Message) -> tuple[DeathRecord, ...]:
    """The ``x-death`` entries of ``message``, newest first, as the contract's records."""
    entries = message.headers.get(X_DEATH)
    if not isinstance(entries, list):
        return ()
    return tuple(_record(entry) for entry in entries if isinstance(entry, Mapping))


def without_broker_headers(headers: Mapping[str, Any]) -> dict[str, Any]:
    """The application's headers only: what a copy the pipeline publishes carries on."""
    return {k: v for k, v in headers.items() if k not in BROKER_HEADERS}


def _record(entry: Mapping[str, Any]) -> DeathRecord:
    count = entry.get("count")
    at = entry.get("time")
    details = tuple((key, _text(entry[key])) for key in _SHOWN if entry.get(key) not in (None, "", []))
    return DeathRecord(
        queue=_text(entry.get("queue")) or None,
        reason=_text(entry.get("reason")) or None,
        count=count if isinstance(count, int) and not isinstance(count, bool) else None,
        at=at.isoformat() if isinstance(at, datetime.datetime) else (_text(at) or None),
        details=details,
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)
