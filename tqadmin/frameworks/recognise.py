"""Which framework wrote a message, and what it says about the job: one call for every caller.

Readers are tried in a fixed order and the first that recognises the message wins: tqadmin's own format
first (the default), then the formats that announce themselves in headers or in distinctive body fields.
What none recognises is ``unknown`` and shows as tqadmin always showed it: its broker id, no task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tqadmin.frameworks import celery, dramatiq, native, rq, sidekiq
from tqadmin.frameworks.decoding import error_text
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.summary import UNKNOWN, JobSummary
from tqadmin.plugin.models import HEADER_ERROR, Message

Reader = Callable[[MessageParts], JobSummary | None]
READERS: tuple[Reader, ...] = (native.read, celery.read, dramatiq.read, sidekiq.read, rq.read)


def summarise(message: Message) -> JobSummary:
    """What ``message`` is. Never raises: hostile input is ``unknown``, or partly read."""
    parts = MessageParts(message.headers, message.body, message.id)
    summary = next(
        (found for read in READERS if (found := read(parts)) is not None),
        JobSummary(UNKNOWN, id=message.id),
    )
    # tqadmin's worker writes why it dead-lettered a message whatever the message's format (a body it could
    # not read is "malformed"); that is the error to show and group by.
    ours = error_text(parts.headers.get(HEADER_ERROR))
    return replace(summary, error=ours) if ours else summary
