"""RQ's jobs (Redis, with the Redis plugin): a job is a hash ``rq:job:<id>``, not a queued message body.

The Redis plugin hands a job over as a message whose headers are the hash's fields (and, for a failed job,
those of its latest result in ``rq:results:<id>``, where RQ 1.12 and later keep ``exc_string``) and whose id
is the job id. ``data`` (function, arguments) is pickled: it is never read, let alone unpickled. The
``description`` RQ writes, ``module.func(1, 'x')``, names the function and shows the arguments instead.
"""

from __future__ import annotations

import re

from tqadmin.frameworks.decoding import (
    as_text,
    count,
    epoch_seconds,
    error_text,
    inflate,
    last_line,
    name,
    unbase64,
)
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.preview import text_preview
from tqadmin.frameworks.summary import RQ, JobSummary

JOB_FIELDS = frozenset({"origin", "created_at", "status"})
_CALL = re.compile(r"(?P<function>[\w.<>]+)\((?P<args>.*)\)", re.DOTALL)


def read(parts: MessageParts) -> JobSummary | None:
    fields = parts.headers
    if not fields.keys() >= JOB_FIELDS:
        return None
    call = _call(fields.get("description"))
    return JobSummary(
        RQ,
        id=parts.known_id,
        task=name(call["function"]) if call else None,
        args=text_preview(call["args"]) if call and call["args"] else None,
        retries=count(fields.get("number_of_retries")),
        error=_last_exception(fields.get("exc_string"), fields.get("exc_info")),
        sent_at=epoch_seconds(fields.get("enqueued_at")) or epoch_seconds(fields.get("created_at")),
        sent_to=name(fields.get("origin")),
    )


def called_function(description: object) -> str | None:
    """The function a job's ``description`` names (``module.func`` of ``module.func(1, 'x')``)."""
    call = _call(description)
    return name(call["function"]) if call else None


def _call(description: object) -> re.Match[str] | None:
    return _CALL.fullmatch((as_text(description) or "")[:10_000])


def _last_exception(exc_string: object, exc_info: object) -> str | None:
    """The exception line: ``exc_string`` of a result is base64 of zlib; older RQ kept ``exc_info`` in the
    hash, zlib-compressed (or plain text before that)."""
    compressed = unbase64(exc_string)
    traceback = inflate(compressed) if compressed is not None else None
    if traceback is None and exc_info is not None:
        traceback = inflate(exc_info) or as_text(exc_info)
    return last_line(traceback) or error_text(as_text(exc_string))
