"""Jobs as docs/interface.md defines them, and a codec that refuses hostile bodies before they cost anything.

A body is checked in the cheapest order: size first (before any parsing), then UTF-8, then JSON with NaN and
Infinity refused, then nesting depth, then shape (an object with a string ``task_type``). Every refusal is a
:class:`MalformedJob` carrying the dead-letter reason (``too_large`` or ``malformed``), so the worker can
dead-letter the body byte for byte and keep running.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from tqadmin.plugin.models import HEADER_RETRY_COUNT

DEFAULT_MAX_BYTES = 1_048_576
DEFAULT_MAX_DEPTH = 32
RESERVED = ("task_type", "id", "timestamp", "retry_count")

Reason = Literal["malformed", "too_large"]


class MalformedJob(ValueError):
    """A body that cannot be a job; ``reason`` is the ``x-tq-reason`` it is dead-lettered with."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(detail)
        self.reason: Reason = reason


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
    job_id = data.get("id")
    if job_id is not None and not isinstance(job_id, str | int):
        raise MalformedJob("malformed", "'id' must be a string")
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
    if len(body) > max_bytes:
        raise MalformedJob("too_large", f"body is {len(body)} bytes, over the {max_bytes}-byte limit")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedJob("malformed", f"body is not UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise MalformedJob("malformed", f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise MalformedJob("malformed", f"body is a JSON {type(data).__name__}, not an object")
    if _depth(data, max_depth) > max_depth:
        raise MalformedJob("malformed", f"body nests deeper than {max_depth} levels")
    return job_from_mapping(data)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _depth(value: Any, limit: int) -> int:
    """Nesting depth, iterative and cut off past ``limit`` so a hostile body cannot exhaust the stack."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest
