"""A :class:`Message` as an SQS message and back: body text, message attributes, and AWS's rules for both.

SQS rules that moto does not enforce (so the plugin does, before anything is sent):

- a body is XML-valid Unicode text (``#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF``):
  any other body (binary, or text with a NUL) travels base64-encoded, said by the attribute
  ``x-tq-body-encoding: base64``, and is decoded back to the same bytes on receipt. A message whose
  attribute says another encoding, or says base64 of a body that is not (canonical) base64, is received as
  its text, the attribute kept among its headers and sent back as it came, and the message
  :attr:`~tqadmin.plugin.models.Message.undecodable`: dead-lettered as ``malformed``, never a dead thread;
- at most 10 message attributes, each named with letters, digits, ``-``, ``_`` and ``.`` (not first or last,
  never two in a row), at most 256 characters, not starting ``AWS.`` or ``Amazon.``, with a non-empty value
  of XML-valid text, a number of at most 38 digits, or bytes. Headers that do not fit, by count, name or
  value, travel together as JSON in one attribute, ``x-tq-headers``, and are unpacked on receipt; the
  ``x-tq-*`` headers an on-call engineer reads first keep attributes of their own;
- a message (body, attribute names, types and values) is at most the queue's MaximumMessageSize.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from tqadmin.errors import PayloadTooLarge
from tqadmin.plugin.bodies import load_json
from tqadmin.plugin.models import (
    HEADER_ATTEMPTS,
    HEADER_DEAD_LETTERED_AT,
    HEADER_ERROR,
    HEADER_FIRST_SEEN,
    HEADER_ORIGINAL_QUEUE,
    HEADER_REASON,
    HEADER_REPLAYS,
    HEADER_RETRY_COUNT,
    Message,
)

MAX_ATTRIBUTES = 10
MAX_NAME = 256
MAX_NUMBER_DIGITS = 38
BODY_ENCODING = "x-tq-body-encoding"
PACKED = "x-tq-headers"
NOT_BEFORE = (
    "x-tq-not-before"  # epoch ms before which a copy is deferred (a long delay hopping, a FIFO retry)
)
# Kept as attributes of their own when not all headers fit: what a person looks for in the console first.
FIRST = (
    HEADER_REASON,
    HEADER_ERROR,
    HEADER_ORIGINAL_QUEUE,
    HEADER_ATTEMPTS,
    HEADER_DEAD_LETTERED_AT,
    HEADER_FIRST_SEEN,
    HEADER_REPLAYS,
    HEADER_RETRY_COUNT,
    NOT_BEFORE,
)
OWN = frozenset({BODY_ENCODING, PACKED})
# Broker metadata read from a received message and kept in Message.properties.
SYSTEM_ATTRIBUTES = (
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "MessageGroupId",
    "MessageDeduplicationId",
    "SequenceNumber",
    "DeadLetterQueueSourceArn",
    "SenderId",
)

_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_NAME = re.compile(r"^[A-Za-z0-9_-](?:[A-Za-z0-9_-]|\.(?!\.))*(?<!\.)$")
_RESERVED_PREFIXES = ("aws.", "amazon.")
_INTEGER = re.compile(r"^-?\d+$")


def is_xml_text(text: str) -> bool:
    return _NOT_XML.search(text) is None


def valid_attribute_name(name: str) -> bool:
    return (
        0 < len(name) <= MAX_NAME
        and _NAME.match(name) is not None
        and not name.lower().startswith(_RESERVED_PREFIXES)
    )


def encode_body(body: bytes) -> tuple[str, bool]:
    """The body as SQS text, and whether it had to be base64-encoded to be XML-valid text."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and is_xml_text(text):
        return text, False
    return base64.b64encode(body).decode("ascii"), True


def attribute_value(value: Any) -> dict[str, Any] | None:
    """``value`` as one SQS attribute, or ``None`` when SQS cannot carry it as one (then it is packed)."""
    if isinstance(value, str):
        return {"DataType": "String", "StringValue": value} if value and is_xml_text(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        return (
            {"DataType": "Number", "StringValue": text}
            if len(text.lstrip("-")) <= MAX_NUMBER_DIGITS
            else None
        )
    if isinstance(value, bytes):
        return {"DataType": "Binary", "BinaryValue": value} if value else None
    return None


def encode_attributes(headers: Mapping[str, Any], body_encoded: bool) -> dict[str, dict[str, Any]]:
    """Message attributes for ``headers`` within SQS's limits (see the module's docstring)."""
    single: dict[str, dict[str, Any]] = {}
    packed: dict[str, Any] = {}
    # the encoding an undecodable message came with goes back as it came, beside its unchanged text
    said = None if body_encoded or BODY_ENCODING not in headers else attribute_value(headers[BODY_ENCODING])
    for name in _in_priority(headers):
        if name == BODY_ENCODING and said is not None:
            continue
        value = headers[name]
        attribute = attribute_value(value) if valid_attribute_name(name) and name not in OWN else None
        if attribute is None:
            packed[name] = value
        else:
            single[name] = attribute
    room = MAX_ATTRIBUTES - (1 if body_encoded or said is not None else 0)
    if len(single) + (1 if packed else 0) > room:
        names = list(single)
        for name in names[room - 1 :]:
            packed[name] = headers[name]
            del single[name]
    if packed:
        single[PACKED] = {
            "DataType": "String",
            "StringValue": json.dumps(_jsonable(packed), ensure_ascii=True),
        }
    if body_encoded:
        single[BODY_ENCODING] = {"DataType": "String", "StringValue": "base64"}
    elif said is not None:
        single[BODY_ENCODING] = said
    return single


def _in_priority(headers: Mapping[str, Any]) -> list[str]:
    first = [name for name in FIRST if name in headers]
    return first + [name for name in headers if name not in FIRST]


def message_size(body: str, attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """What SQS counts against MaximumMessageSize: the body and every attribute's name, type and value."""
    size = len(body.encode("utf-8"))
    for name, attribute in attributes.items():
        value = attribute.get("BinaryValue", b"") or str(attribute.get("StringValue", "")).encode("utf-8")
        size += len(name.encode("utf-8")) + len(str(attribute["DataType"]).encode("utf-8")) + len(value)
    return size


def encode(message: Message, max_bytes: int) -> tuple[str, dict[str, dict[str, Any]]]:
    """Body text and attributes for ``message``; :class:`PayloadTooLarge` when SQS would refuse its size."""
    body, encoded = encode_body(message.body)
    attributes = encode_attributes(message.headers, encoded)
    size = message_size(body, attributes)
    if size > max_bytes:
        raise PayloadTooLarge(
            f"message {message.id or '(no id)'} is {size} bytes with its attributes"
            f"{' (base64: the body is not text)' if encoded else ''}; the queue takes at most {max_bytes}"
        )
    return body, attributes


def decode_attributes(attributes: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], Any]:
    """The headers the attributes carry (packed ones unpacked), and what ``x-tq-body-encoding`` says
    (``None`` when the message has no such attribute)."""
    headers: dict[str, Any] = {}
    said = None
    for name, attribute in attributes.items():
        if name == BODY_ENCODING:
            said = _value(attribute)
        elif name == PACKED:
            headers.update(_unpacked(str(attribute.get("StringValue", "{}"))))
        else:
            headers[name] = _value(attribute)
    return headers, said


def decode_body(text: str, said: Any) -> tuple[bytes, str | None]:
    """The body's bytes, given what ``x-tq-body-encoding`` ``said``; and, when that cannot be undone, why
    (the bytes are then the text as received). Only canonical base64 is undone, so that the body sent back
    (a dead letter, a move) is the text that came."""
    if said is None:
        return text.encode("utf-8"), None
    if said != "base64":
        return text.encode("utf-8"), f"{BODY_ENCODING} {said!r} is not an encoding tqadmin decodes (base64)"
    try:
        body = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        body = None
    if body is None or base64.b64encode(body).decode("ascii") != text:
        return text.encode("utf-8"), f"{BODY_ENCODING} says base64, but the body is not base64"
    return body, None


def _value(attribute: Mapping[str, Any]) -> Any:
    kind = str(attribute.get("DataType", "String"))
    if kind.startswith("Binary"):
        return bytes(attribute.get("BinaryValue", b""))
    text = str(attribute.get("StringValue", ""))
    if kind.startswith("Number"):
        if _INTEGER.match(text):
            return int(text)
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _unpacked(text: str) -> dict[str, Any]:
    try:
        value = load_json(text)
    except ValueError:
        return {PACKED: text}  # not ours after all: shown as it is
    if not isinstance(value, dict):
        return {PACKED: text}
    return {str(k): _from_json(v) for k, v in value.items()}


def _jsonable(value: Any) -> Any:
    """Header values as JSON, bytes tagged so that they come back as bytes."""
    if isinstance(value, bytes):
        return {"$base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$base64"} and isinstance(value["$base64"], str):
            with contextlib.suppress(binascii.Error, ValueError):  # else not ours: shown as it is
                return base64.b64decode(value["$base64"], validate=True)
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return value


def to_message(raw: Mapping[str, Any]) -> Message:
    """A received SQS message as the driver-free :class:`Message` both faces use. Its id is the job's (the
    body's ``id``), else SQS's MessageId; ``enqueued_at`` is when it became due."""
    headers, said = decode_attributes(raw.get("MessageAttributes") or {})
    body, undecodable = decode_body(str(raw.get("Body", "")), said)
    if undecodable is not None:
        headers[BODY_ENCODING] = said
    system = raw.get("Attributes") or {}
    properties: dict[str, Any] = {name: system[name] for name in SYSTEM_ATTRIBUTES if name in system}
    properties["MessageId"] = raw.get("MessageId")
    job = Message(body, undecodable=undecodable).job()
    job_id = job.get("id") if job is not None else None
    receives = int(system.get("ApproximateReceiveCount") or 0) or None
    return Message(
        body=body,
        headers=headers,
        properties=properties,
        id=str(job_id) if job_id is not None else raw.get("MessageId"),
        redelivered=receives is not None and receives > 1,
        enqueued_at=_due(system, headers),
        delivery_count=receives,
        undecodable=undecodable,
    )


def _due(system: Mapping[str, Any], headers: Mapping[str, Any]) -> float | None:
    sent = system.get("SentTimestamp")
    sent_s = int(sent) / 1000 if sent else None
    due_s = _not_before_s(headers)
    return sent_s if due_s is None else max(due_s, sent_s or 0.0)


def _not_before_s(headers: Mapping[str, Any]) -> float | None:
    value = headers.get(NOT_BEFORE)
    return value / 1000 if isinstance(value, int) and not isinstance(value, bool) else None


def not_before_header(due_at_s: float) -> dict[str, int]:
    return {NOT_BEFORE: round(due_at_s * 1000)}


def without(headers: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    dropped = set(names)
    return {k: v for k, v in headers.items() if k not in dropped}


def due_in(message: Message, now_s: float | None = None) -> float:
    """Seconds until ``message`` is due (0 or less: hand it out now)."""
    due_s = _not_before_s(message.headers)
    return 0.0 if due_s is None else due_s - (time.time() if now_s is None else now_s)
