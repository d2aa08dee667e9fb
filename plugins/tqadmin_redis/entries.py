"""A tqadmin message as a stream entry and back: the body byte for byte, headers and properties as JSON.

Fields: ``body`` (the bytes as given), ``id`` (the job id, when known), ``headers`` and ``properties``
(JSON objects, left out when empty). The entry id says when the entry was added, to the millisecond on the
server's clock: that is the message's ``enqueued_at`` (for a retry, the moment its delay was over).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tqadmin.plugin.bodies import load_json
from tqadmin.plugin.models import Message, _jsonable

BODY = b"body"
ID = b"id"
HEADERS = b"headers"
PROPERTIES = b"properties"


def fields_of(message: Message) -> dict[str, bytes | str]:
    """The stream fields that store ``message``."""
    fields: dict[str, bytes | str] = {"body": message.body}
    if message.id is not None:
        fields["id"] = message.id
    if message.headers:
        fields["headers"] = headers_json(message.headers)
    if message.properties:
        fields["properties"] = json.dumps(_jsonable(dict(message.properties)), separators=(",", ":"))
    return fields


def flat_fields(message: Message) -> list[bytes | str]:
    """``fields_of`` as the flat list ``XADD`` (and a script's ``unpack``) takes."""
    return [item for pair in fields_of(message).items() for item in pair]


def headers_json(headers: Mapping[str, Any]) -> str:
    return json.dumps(_jsonable(dict(headers)), separators=(",", ":"), ensure_ascii=False)


def entry_id_ms(entry_id: str) -> int:
    """The millisecond part of a stream entry id (``1700000000000-3``)."""
    return int(entry_id.partition("-")[0])


def to_message(
    entry_id: bytes | str, raw: Sequence[bytes] | Mapping[bytes, bytes], deliveries: int
) -> Message:
    """The message an entry holds. ``raw`` is the field list a script returns or the mapping redis-py
    makes of an ``XRANGE``/``XREADGROUP`` reply; ``deliveries`` is the entry's delivery count (0 when
    looked at without being delivered)."""
    fields = raw if isinstance(raw, Mapping) else dict(zip(raw[::2], raw[1::2], strict=True))
    ident = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    job_id = fields.get(ID)
    return Message(
        body=bytes(fields.get(BODY, b"")),
        headers=_object(fields.get(HEADERS)),
        properties=_object(fields.get(PROPERTIES)),
        id=job_id.decode("utf-8", "replace") if job_id is not None else None,
        redelivered=deliveries > 1,
        enqueued_at=entry_id_ms(ident) / 1000,
        delivery_count=deliveries or None,
    )


def _object(raw: bytes | None) -> dict[str, Any]:
    """A JSON object field; one that is missing or was written by hand as something else is no headers."""
    if not raw:
        return {}
    try:
        value = load_json(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
