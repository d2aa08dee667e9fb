"""One mapping between pika's deliveries and properties and the driver-free :class:`Message`, used by
the admin face (peek, transfers) and the transport face (consumer, publisher) alike.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import time
from collections.abc import Mapping
from typing import Any

import pika
import pika.spec

from tqadmin.errors import UsageError
from tqadmin.plugin.models import Message

PERSISTENT = 2
# Epoch milliseconds when the message became due (published, or its retry delay over): the worker's wait
# time starts there. Milliseconds as an integer because AMQP field tables have no float pika can encode.
DUE_MS = "x-tq-due-ms"
DELIVERY_COUNT = "x-delivery-count"  # only quorum queues add it

# BasicProperties attributes carried over as Message.properties (headers travel separately). ``user_id`` is
# left out on purpose: RabbitMQ rejects a publish whose user_id is not the publishing user.
PROPERTY_NAMES = (
    "content_type",
    "content_encoding",
    "delivery_mode",
    "priority",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "timestamp",
    "type",
    "app_id",
    "cluster_id",
)
# Content-encodings that say the body bytes are as they are (a charset, as kombu writes ``utf-8``, or raw
# bytes): tqadmin undoes no other (gzip, deflate...), so a message that says one is no job it can read.
PLAIN_ENCODINGS = frozenset({"", "identity", "utf-8", "utf8", "binary"})
_CARRIED = frozenset(PROPERTY_NAMES)


def to_message(
    method: pika.spec.Basic.Deliver | pika.spec.Basic.GetOk, props: pika.spec.BasicProperties, body: bytes
) -> Message:
    """A pika delivery, to a consumer or a ``basic.get``, as the driver-free :class:`Message` both faces use.

    Its id is ``message_id`` or the body's ``id``; where it was published (exchange and routing key) goes
    into the properties, which are republished only under :data:`PROPERTY_NAMES`.
    """
    # Read from the instance's attributes in one pass (the consumer's I/O thread does this per delivery);
    # pika sets them all in __init__, in the order of PROPERTY_NAMES.
    properties: dict[str, Any] = {
        name: value for name, value in vars(props).items() if value is not None and name in _CARRIED
    }
    properties["exchange"] = method.exchange or ""
    properties["routing_key"] = method.routing_key or ""
    headers = dict(props.headers or {})
    undecodable = _undecodable(props.content_encoding)
    job_id = props.message_id
    if job_id is None:
        job = Message(body, undecodable=undecodable).job()
        job_id = str(job["id"]) if job is not None and job.get("id") is not None else None
    due_ms = headers.get(DUE_MS)
    delivery_count = headers.get(DELIVERY_COUNT)
    return Message(
        body=bytes(body),
        headers=headers,
        properties=properties,
        id=job_id,
        redelivered=bool(method.redelivered),
        enqueued_at=due_ms / 1000 if isinstance(due_ms, int) else None,
        delivery_count=delivery_count if isinstance(delivery_count, int) else None,
        undecodable=undecodable,
    )


def _undecodable(content_encoding: object) -> str | None:
    if content_encoding is None or str(content_encoding).strip().lower() in PLAIN_ENCODINGS:
        return None
    return f"content-encoding {content_encoding!r} is not one tqadmin decodes (the body is read as it is)"


def to_properties(message: Message) -> pika.BasicProperties:
    """Properties for republishing ``message``: everything it carried, always persistent.

    Raises :class:`UsageError` naming the message when a header cannot travel over AMQP (an imported
    file can hold values an AMQP field table cannot), before anything of its batch is sent.
    """
    kept = {k: v for k, v in message.properties.items() if k in PROPERTY_NAMES and v is not None}
    kept["delivery_mode"] = PERSISTENT
    if "message_id" not in kept and message.id is not None:
        kept["message_id"] = message.id
    try:
        if "priority" in kept:
            kept["priority"] = int(kept["priority"])
        if "timestamp" in kept:
            kept["timestamp"] = int(kept["timestamp"])
        headers = _amqp_headers(message.headers)
    except (ValueError, TypeError) as exc:
        name = repr(message.id) if message.id is not None else "without an id"
        raise UsageError(
            f"message {name} cannot be sent over AMQP: {exc}; nothing of its batch was sent"
        ) from None
    return pika.BasicProperties(headers=headers or None, **kept)


def _amqp_headers(value: Mapping[str, Any]) -> dict[str, Any]:
    """Undo the ``{"$base64": ...}`` marker that JSON export uses for binary header values, and check that
    every value is one an AMQP field table holds."""
    headers = {}
    for key, item in value.items():
        try:
            headers[str(key)] = _amqp_value(item)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"header {key!r}: {exc}") from None
    return headers


def _amqp_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        if set(value) == {"$base64"} and isinstance(value["$base64"], str):
            return base64.b64decode(value["$base64"], validate=True)
        return _amqp_headers(value)
    if isinstance(value, list | tuple):
        return [_amqp_value(v) for v in value]
    if isinstance(value, float):
        return _decimal(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise ValueError(f"{value} does not fit a 64-bit AMQP integer")
    if value is None or isinstance(value, str | bytes | int | decimal.Decimal | datetime.datetime):
        return value
    raise TypeError(f"{type(value).__name__} is not an AMQP field value")


def _decimal(value: float) -> decimal.Decimal:
    """A JSON number with a fraction as an AMQP decimal (pika sends no floating point values)."""
    number = decimal.Decimal(repr(value)).normalize()
    exponent = number.as_tuple().exponent
    places = -exponent if isinstance(exponent, int) and exponent < 0 else 0
    if not number.is_finite() or places > 255 or abs(int(number.scaleb(places))) >= 2**31:
        raise ValueError(f"{value!r} does not fit an AMQP decimal (9 digits)")
    return number


def publish_properties(message: Message, due_at_s: float | None = None) -> pika.BasicProperties:
    """Properties for a message the pipeline publishes (a new job, a retry, a dead letter): the message's
    own, persistent, JSON unless it says otherwise, and due at ``due_at_s`` (default now).

    The due time goes into the ``timestamp`` property too (whole seconds, replacing an earlier one): that
    is what RabbitMQ reports as the head's ``head_message_timestamp``, so a queue's oldest age counts from
    when its head could be taken (a retry's delay over, a dead letter's death), never from a first publish.
    """
    properties = to_properties(message)
    headers = dict(properties.headers or {})
    due_s = time.time() if due_at_s is None else due_at_s
    headers[DUE_MS] = int(due_s * 1000)
    properties.timestamp = int(due_s)
    properties.headers = headers
    if properties.content_type is None:
        properties.content_type = "application/json"
    return properties
