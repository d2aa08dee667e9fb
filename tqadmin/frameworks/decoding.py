"""Careful reading of foreign data: every helper returns ``None`` (or :data:`NOT_JSON`) instead of raising.

Messages come from other programs and may be hostile: bodies of many megabytes, JSON nested past the
interpreter's recursion limit, NaN where a number belongs, bytes that are not UTF-8, zlib bombs. Nothing here
raises for any of them, and nothing ever unpickles. Every number read is finite and in range (an integer of
401 digits is no count and no time).

Registries (a worker's hash, a process's JSON) are read stricter than messages: a message that cannot be
read is still shown, as ``unknown``, while a registry entry with a field that is there but not what its
framework writes is :class:`~tqadmin.plugin.workers.MalformedEntry`, raised by :func:`checked` and
:func:`json_object` naming the field, so that the reader skips that entry, names it, and lists the others.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import math
import zlib
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from tqadmin.plugin.workers import MalformedEntry
from tqadmin.show.finite import finite
from tqadmin.telemetry.task_names import MAX_TASK_TYPE_CHARS

# A body past this size is not parsed: recognised from its headers alone, or not at all. RabbitMQ refuses
# messages over 16 MiB by default, so a real task message is well below.
MAX_PARSED_BYTES: Final = 16 * 1024 * 1024
# zlib-compressed tracebacks (RQ) are inflated to at most this much: enough for any real traceback.
MAX_INFLATED_BYTES: Final = 1024 * 1024
MAX_NAME_CHARS: Final = MAX_TASK_TYPE_CHARS  # a name past it is no tqadmin job's task type either
MAX_ERROR_CHARS: Final = 2048
_LATEST_EPOCH_S: Final = 253_402_300_799.0  # 9999-12-31T23:59:59Z, the last moment datetime can show
MAX_COUNT: Final = 2**63 - 1  # a signed 64-bit integer: what Redis and a typed JSON reader hold as one

T = TypeVar("T")


class _NotJson:
    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final = _NotJson()


def parse_json(data: bytes | str) -> Any:
    """``data`` as a JSON value, or :data:`NOT_JSON` when it is not one (or too large to read)."""
    if len(data) > MAX_PARSED_BYTES:
        return NOT_JSON
    try:
        return json.loads(data)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return NOT_JSON


def as_text(value: Any) -> str | None:
    """A string field as text: bytes decoded (undecodable bytes replaced), any other type ``None``."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def name(value: Any) -> str | None:
    """An id or task name: text or an integer, bounded in length; empty counts as absent."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    text = as_text(value)
    return text[:MAX_NAME_CHARS] if text else None


def error_text(value: Any) -> str | None:
    text = as_text(value)
    text = text.strip() if text else None
    return text[:MAX_ERROR_CHARS] if text else None


def last_line(traceback: str | None) -> str | None:
    """The exception line of a Python traceback (its last non-blank line): what groups failures."""
    if not traceback:
        return None
    lines = [line for line in traceback.splitlines() if line.strip()]
    return error_text(lines[-1]) if lines else None


def count(value: Any) -> int | None:
    """A retry count: a non-negative integer, or its decimal text (Redis hashes hold only strings)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, str | bytes):
        text = as_text(value) or ""
        value = int(text) if text.isascii() and text.isdigit() and len(text) < 19 else None
    return value if isinstance(value, int) and 0 <= value <= MAX_COUNT else None


def seconds(value: Any) -> float | None:
    """A duration in seconds: a non-negative finite number, or its decimal text (RQ's
    ``total_working_time``); ``None`` for anything else."""
    if isinstance(value, str | bytes):
        text = as_text(value) or ""
        try:
            value = float(text) if len(text) < 32 else None
        except ValueError:
            return None
    number = finite(value)
    return float(number) if number is not None and number >= 0 else None


def epoch_seconds(value: Any, *, milliseconds: bool = False) -> float | None:
    """A moment as seconds since the epoch: a number (seconds, or milliseconds when ``milliseconds``) or ISO
    8601 text (a time without an offset is UTC); ``None`` for anything else or out of range."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = finite(value)
        if number is None:
            return None
        seconds = number / 1000 if milliseconds else float(number)
        return seconds if 0 <= seconds <= _LATEST_EPOCH_S else None
    text = as_text(value)
    if not text or len(text) > 64:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    seconds = moment.timestamp()
    return seconds if 0 <= seconds <= _LATEST_EPOCH_S else None


def checked(value: Any, read: Callable[[Any], T | None], field: str, expected: str) -> T | None:
    """A registry field read by ``read`` (:func:`name`, :func:`count`, :func:`epoch_seconds`...): ``None``
    when it is absent or empty, :class:`MalformedEntry` ("``field`` is not ``expected``") when it is there
    and ``read`` finds nothing in it."""
    if value is None or value in ("", b""):
        return None
    found = read(value)
    if found is None:
        raise MalformedEntry(f"{field} is not {expected}")
    return found


def json_object(value: Any, field: str) -> dict[str, Any]:
    """A registry field that holds a JSON object (as text, or already parsed): ``{}`` when it is absent,
    :class:`MalformedEntry` when it is anything but an object."""
    if value is None:
        return {}
    parsed = (
        value if isinstance(value, dict) else parse_json(value) if isinstance(value, bytes | str) else None
    )
    if not isinstance(parsed, dict):
        raise MalformedEntry(f"{field} is not a JSON object")
    return parsed


def text_keys(mapping: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping with its keys as text: a Redis hash read without decoding has bytes keys."""
    keys = ((as_text(key), value) for key, value in mapping.items())
    return {key: value for key, value in keys if key is not None}


def inflate(data: Any) -> str | None:
    """zlib-compressed text, inflated to at most :data:`MAX_INFLATED_BYTES`; ``None`` when it is not zlib."""
    if isinstance(data, str):
        data = data.encode("latin-1", "replace")
    if not isinstance(data, bytes):
        return None
    try:
        inflated = zlib.decompressobj().decompress(data, MAX_INFLATED_BYTES)
    except zlib.error:
        return None
    return inflated.decode("utf-8", "replace")


def unbase64(text: Any) -> bytes | None:
    raw = as_text(text)
    if raw is None:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return None
