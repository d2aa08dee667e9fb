"""Jobs as docs/interface.md defines them, validated from what :mod:`tqadmin.plugin.bodies` reads.

A body is read by the one reading both plugin faces use (size, UTF-8, JSON without NaN, nesting depth, an
object), then checked for a job's shape (a string ``task_type`` of at most
:data:`~tqadmin.telemetry.task_names.MAX_TASK_TYPE_CHARS` characters and an ``id`` of at most
:data:`~tqadmin.telemetry.task_names.MAX_JOB_ID_CHARS`: telemetry, the store, logs and exporters keep them,
so one of megabytes is no job's). Every refusal is a :class:`MalformedJob` carrying the
dead-letter reason (``too_large`` or ``malformed``), so the worker can dead-letter the body byte for byte and
keep running.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tqadmin.plugin.bodies import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, MalformedJob, job_object
from tqadmin.plugin.models import HEADER_RETRY_COUNT, Message
from tqadmin.telemetry.task_names import MAX_JOB_ID_CHARS, MAX_TASK_TYPE_CHARS

# The worker and the publisher refuse with the contract's reading of a body (re-exported here).
__all__ = [
    "DEFAULT_MAX_BYTES",
    "RESERVED",
    "Job",
    "MalformedJob",
    "decode_job",
    "decode_message",
    "job_from_mapping",
    "new_job",
    "utc_now_iso",
    "with_header_retries",
]

RESERVED = ("task_type", "id", "timestamp", "retry_count")


@dataclass(frozen=True, slots=True)
class Job:
    """One job: the seed's four fields plus the task's own, kept apart so a task cannot clobber the id."""

    task_type: str
    id: str
    timestamp: str
    retry_count: int = 0
    fields: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_type": self.task_type,
            "id": self.id,
            "timestamp": self.timestamp,
            "retry_count": self.retry_count,
            **self.fields,
        }

    def encode(self) -> bytes:
        return json.dumps(self.to_dict(), separators=(",", ":"), allow_nan=False).encode("utf-8")

    def with_retry_count(self, retry_count: int) -> Job:
        return Job(self.task_type, self.id, self.timestamp, retry_count, self.fields)


def with_header_retries(job: Job, headers: Mapping[str, Any]) -> Job:
    """``job`` with the retry count its ``x-tq-retry-count`` header carries (the worker's retries leave the
    body as the producer wrote it); the body's own ``retry_count`` when the header is absent or not a count.
    """
    value = headers.get(HEADER_RETRY_COUNT)
    if isinstance(value, bytes | str):
        value = int(value) if value.isdigit() else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or value == job.retry_count:
        return job
    return job.with_retry_count(value)


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_job(task_type: str, fields: Mapping[str, Any] | None = None, job_id: str | None = None) -> Job:
    """A job ready to publish: a UUID id when none is given, the current UTC time, ``retry_count`` 0."""
    own = {k: v for k, v in (fields or {}).items() if k not in RESERVED}
    return Job(task_type, job_id or str(uuid.uuid4()), utc_now_iso(), 0, own)


def job_from_mapping(data: Mapping[str, Any]) -> Job:
    """Validate a parsed object as a job, filling ``id`` and ``timestamp`` as the publisher does."""
    task_type = data.get("task_type")
    if not isinstance(task_type, str) or not task_type:
        raise MalformedJob("malformed", "a job needs a non-empty string 'task_type'")
    if len(task_type) > MAX_TASK_TYPE_CHARS:
        raise MalformedJob(
            "malformed", f"'task_type' is {len(task_type)} characters, over the {MAX_TASK_TYPE_CHARS} allowed"
        )
    job_id = data.get("id")
    if job_id is not None and not isinstance(job_id, str | int):
        raise MalformedJob("malformed", "'id' must be a string")
    if job_id is not None and len(str(job_id)) > MAX_JOB_ID_CHARS:
        raise MalformedJob(
            "malformed", f"'id' is {len(str(job_id))} characters, over the {MAX_JOB_ID_CHARS} allowed"
        )
    retry_count = data.get("retry_count", 0)
    if not isinstance(retry_count, int) or isinstance(retry_count, bool) or retry_count < 0:
        raise MalformedJob("malformed", "'retry_count' must be a non-negative integer")
    timestamp = data.get("timestamp")
    if timestamp is not None and not isinstance(timestamp, str):
        raise MalformedJob("malformed", "'timestamp' must be an ISO 8601 string")
    own = {k: v for k, v in data.items() if k not in RESERVED}
    return Job(
        task_type=task_type,
        id=str(job_id) if job_id is not None else str(uuid.uuid4()),
        timestamp=timestamp or utc_now_iso(),
        retry_count=retry_count,
        fields=own,
    )


def decode_job(body: bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = DEFAULT_MAX_DEPTH) -> Job:
    """Parse a message body into a :class:`Job` or raise :class:`MalformedJob` saying why not."""
    return job_from_mapping(job_object(body, max_bytes=max_bytes, max_depth=max_depth))


def decode_message(message: Message, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Job:
    """The delivered ``message``'s job, or :class:`MalformedJob` saying why it has none (its body, or an
    encoding its plugin could not undo): read by :meth:`Message.read_job`, as the admin face reads it."""
    return job_from_mapping(message.read_job(max_bytes))
