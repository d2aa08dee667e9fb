"""The ``x-tq-*`` headers a dead-lettered message carries (docs/interface.md), built without a broker.

``x-tq-error`` is what an on-call engineer reads first, so it is the exception's class and message, masked
(task errors love to quote connection strings) and cut to 2 KiB on a character boundary. It is cut before it
is masked (:func:`~tqadmin.show.masking.clip_masked`): a task may raise with a message of megabytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tqadmin.plugin.models import (
    HEADER_ATTEMPTS,
    HEADER_DEAD_LETTERED_AT,
    HEADER_ERROR,
    HEADER_FIRST_SEEN,
    HEADER_ORIGINAL_QUEUE,
    HEADER_REASON,
)
from tqadmin.show.masking import clip_masked

MAX_ERROR_BYTES = 2048


def iso_utc(epoch_s: float) -> str:
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def describe_error(exc: BaseException) -> str:
    """``Class: message``, secrets masked, at most :data:`MAX_ERROR_BYTES` bytes of UTF-8."""
    return clip_error(f"{type(exc).__name__}: {exc}")


def clip_error(text: str) -> str:
    """Cut ``text`` to at most :data:`MAX_ERROR_BYTES` bytes of UTF-8, secrets masked (a character is at
    least one byte: the characters kept are enough to fill the bytes)."""
    clipped = clip_masked(text, MAX_ERROR_BYTES)
    raw = clipped.encode("utf-8")
    if len(raw) <= MAX_ERROR_BYTES:
        return clipped
    return raw[: MAX_ERROR_BYTES - 3].decode("utf-8", errors="ignore") + "..."


def first_seen(headers: Mapping[str, Any], now_s: float) -> str:
    """When a worker first saw this job: carried along retries in a header, else now."""
    seen = headers.get(HEADER_FIRST_SEEN)
    if isinstance(seen, bytes):
        seen = seen.decode("utf-8", errors="replace")
    return seen if isinstance(seen, str) and seen else iso_utc(now_s)


def dead_letter_headers(
    *, reason: str, error: str, attempts: int, queue: str, headers: Mapping[str, Any], now_s: float
) -> dict[str, Any]:
    return {
        HEADER_REASON: reason,
        HEADER_ERROR: error,
        HEADER_ATTEMPTS: attempts,
        HEADER_ORIGINAL_QUEUE: queue,
        HEADER_FIRST_SEEN: first_seen(headers, now_s),
        HEADER_DEAD_LETTERED_AT: iso_utc(now_s),
    }
