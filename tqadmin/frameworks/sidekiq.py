"""Sidekiq's jobs (Redis, with the Redis plugin): one JSON object per job, as its wiki documents it.

``{"class", "args", "jid", "queue", "retry", "created_at", "enqueued_at"}``; a failed job adds
``error_class``, ``error_message``, ``failed_at`` and ``retry_count`` (0 after the first failure, then the
retries made). Times are seconds as a float, or integer milliseconds from Sidekiq 8 on. Rails' ActiveJob
wraps its jobs: ``class`` is the adapter's wrapper, ``wrapped`` the job class, ``args[0]["arguments"]`` the
arguments.
"""

from __future__ import annotations

from typing import Any

from tqadmin.frameworks.decoding import as_text, count, epoch_seconds, error_text, name
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.preview import call_preview
from tqadmin.frameworks.summary import SIDEKIQ, JobSummary

# Past this a Sidekiq time is milliseconds (Sidekiq 8): as seconds it would be after the year 5000.
MILLISECONDS_FROM = 1e11


def read(parts: MessageParts) -> JobSummary | None:
    job = parts.object
    if job is None or not isinstance(job.get("args"), list):
        return None
    job_class, jid = name(job.get("class")), name(job.get("jid"))
    if job_class is None or jid is None:
        return None
    return JobSummary(
        SIDEKIQ,
        id=jid,
        task=name(job.get("wrapped")) or job_class,
        args=call_preview(_arguments(job)),
        retries=count(job.get("retry_count", 0)),
        error=_error(job.get("error_class"), job.get("error_message")),
        sent_at=moment(job.get("enqueued_at")) or moment(job.get("created_at")),
        sent_to=name(job.get("queue")),
    )


def _arguments(job: dict[str, Any]) -> Any:
    args = job["args"]
    if job.get("wrapped") and args and isinstance(args[0], dict) and "arguments" in args[0]:
        return args[0]["arguments"]
    return args


def _error(error_class: Any, message: Any) -> str | None:
    shown = [text for text in (as_text(error_class), as_text(message)) if text]
    return error_text(": ".join(shown)) if shown else None


def moment(value: Any) -> float | None:
    """A Sidekiq time as epoch seconds: seconds as a float, or integer milliseconds from Sidekiq 8 on."""
    big = isinstance(value, int | float) and not isinstance(value, bool) and value > MILLISECONDS_FROM
    return epoch_seconds(value, milliseconds=big)
