"""Dramatiq's messages: one JSON object, the same on RabbitMQ and Redis.

``{"queue_name", "actor_name", "args", "kwargs", "options", "message_id", "message_timestamp"}`` with the
timestamp in milliseconds. The Retries middleware counts failed runs in ``options.retries`` and keeps the
last failure's traceback in ``options.traceback`` before it enqueues the retry, so a message that reached
the dead-letter queue (``<queue>.XQ``) after a retry still carries why it failed.
"""

from __future__ import annotations

from tqadmin.frameworks.decoding import as_text, count, epoch_seconds, last_line, name
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.preview import call_preview
from tqadmin.frameworks.summary import DRAMATIQ, JobSummary

# Dramatiq's delay and dead-letter queues are named after the queue they serve.
SATELLITE_SUFFIXES = (".DQ", ".XQ")


def read(parts: MessageParts) -> JobSummary | None:
    body = parts.object
    if body is None:
        return None
    actor, message_id = name(body.get("actor_name")), name(body.get("message_id"))
    if actor is None or message_id is None:
        return None
    options = body.get("options")
    options = options if isinstance(options, dict) else {}
    return JobSummary(
        DRAMATIQ,
        id=message_id,
        task=actor,
        args=call_preview(body.get("args"), body.get("kwargs")),
        retries=count(options.get("retries", 0)),
        error=last_line(as_text(options.get("traceback"))),
        sent_at=epoch_seconds(body.get("message_timestamp"), milliseconds=True),
        sent_to=home_queue(name(body.get("queue_name"))),
    )


def home_queue(queue: str | None) -> str | None:
    """The queue a message belongs to: a delayed message names Dramatiq's ``.DQ`` queue instead."""
    for suffix in SATELLITE_SUFFIXES:
        if queue and queue.endswith(suffix):
            return queue[: -len(suffix)] or None
    return queue
