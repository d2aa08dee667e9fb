"""Values that cross the plugin boundary: immutable, driver-free, JSON-ready.

Field names match the ``--json`` keys of docs/interface.md so that commands serialise these without a mapping
layer, and the TUI reads the same values the CLI prints.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tqadmin.plugin.bodies import MalformedJob, job_object

# Headers tqadmin writes on dead-lettered and replayed messages (docs/interface.md, "Jobs").
HEADER_REASON = "x-tq-reason"
HEADER_ERROR = "x-tq-error"
HEADER_ATTEMPTS = "x-tq-attempts"
HEADER_ORIGINAL_QUEUE = "x-tq-original-queue"
HEADER_FIRST_SEEN = "x-tq-first-seen"
HEADER_DEAD_LETTERED_AT = "x-tq-dead-lettered-at"
HEADER_REPLAYS = "x-tq-replays"
# Retries made so far, carried in a header so that a retried body stays the producer's byte for byte; the
# worker reads it over the body's ``retry_count`` (which is what the producer wrote: 0 when published).
HEADER_RETRY_COUNT = "x-tq-retry-count"

# The dead-letter queue tqadmin gives a queue ``Q`` where the broker allows a dot (docs/interface.md).
DLQ_SUFFIX = ".dlq"


def dlq_name(queue: str) -> str:
    """``Q.dlq``: the one spelling of tqadmin's dead-letter queue name (a broker that forbids the dot, SQS,
    names its own through :meth:`~tqadmin.plugin.base.BrokerPlugin.dlq_name`)."""
    return queue + DLQ_SUFFIX


# Top-level keys of export files written before the contract was broker-neutral (AMQP addressing).
LEGACY_PROPERTY_KEYS = ("routing_key", "exchange")


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue's figures at one poll. ``None`` means the broker does not report that figure (the plugin's
    :attr:`~tqadmin.plugin.capabilities.Capabilities.unavailable` says why), never a made-up 0.

    ``delayed`` counts messages waiting out a retry delay (not yet ready); ``read_only`` is the reason
    tqadmin may show this queue but not write to it (a queue another framework owns), ``None`` when it may.
    ``delay_for`` names the work queue when this queue only holds messages waiting out a retry delay for it
    (RabbitMQ's ``Q.retry.5s`` tiers): listings fold it into that queue's ``delayed``.

    ``oldest_age_s`` is how long the oldest message that can be taken now has been takeable (a delayed retry
    counts from its due time, so it never makes a queue look stuck); ``dlq_oldest_age_s`` how long the oldest
    message of the queue's dead-letter queue has been there. ``drain_s`` and ``growing`` are filled by
    :class:`~tqadmin.reading.drain.DrainWindow` from successive readings, not by the plugin.
    """

    name: str
    messages: int
    ready: int
    unacked: int
    consumers: int | None
    publish_rate: float | None = None
    deliver_rate: float | None = None
    ack_rate: float | None = None
    oldest_age_s: float | None = None
    dlq: str | None = None
    dlq_messages: int | None = None
    state: str = "running"
    kind: str = ""
    delayed: int | None = None
    read_only: str | None = None
    delay_for: str | None = None
    dlq_oldest_age_s: float | None = None
    drain_s: float | None = None
    growing: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "messages": self.messages,
            "ready": self.ready,
            "unacked": self.unacked,
            "consumers": self.consumers,
            "publish_rate": self.publish_rate,
            "deliver_rate": self.deliver_rate,
            "ack_rate": self.ack_rate,
            "oldest_age_s": self.oldest_age_s,
            "dlq": self.dlq,
            "dlq_messages": self.dlq_messages,
            "state": self.state,
            "type": self.kind,
            "delayed": self.delayed,
            "read_only": self.read_only,
            "delay_for": self.delay_for,
            "dlq_oldest_age_s": self.dlq_oldest_age_s,
            "drain_s": self.drain_s,
            "growing": self.growing,
        }


@dataclass(frozen=True, slots=True)
class Alarm:
    """A broker-wide condition that blocks or endangers publishing (memory or disk alarm, node down)."""

    node: str
    kind: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class QueueListing:
    """The result of one poll: every queue, plus the broker-wide alarms seen in the same call."""

    queues: tuple[QueueStats, ...]
    alarms: tuple[Alarm, ...] = ()
    broker: str = ""


@dataclass(frozen=True, slots=True)
class Message:
    """A message as stored by the broker, the one model of both plugin faces: what the admin face peeks and
    moves, what a consumer delivers to the worker, and what both publish.

    ``body`` is never rewritten by anyone. ``headers`` are the application's headers (AMQP headers, SQS
    message attributes, Redis stream fields); ``properties`` are the broker's own metadata for this message
    (AMQP properties, SQS system attributes), plain data that travels with the message within one broker
    kind. ``id`` is the job id when one is known (the AMQP ``message_id``, or the job's ``id`` field).
    ``enqueued_at`` is the epoch time it became due (published, or its retry delay over) when the broker
    tells; ``delivery_count`` how many times the broker has handed it out, where it counts.

    ``undecodable`` says why the plugin could not undo the encoding the message says its body travels in
    (an SQS ``x-tq-body-encoding`` that is unknown or not true, an AMQP content-encoding tqadmin does not
    decode); ``body`` is then the bytes as received, the headers keep what was said, and the message is no
    job: the worker dead-letters it as ``malformed``, the admin face shows it as it is.
    """

    body: bytes
    headers: Mapping[str, Any] = field(default_factory=dict)
    properties: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    redelivered: bool = False
    enqueued_at: float | None = None
    delivery_count: int | None = None
    undecodable: str | None = None

    def job(self) -> dict[str, Any] | None:
        """The body as a job's JSON object, or ``None`` when it is not one (whatever the body holds)."""
        try:
            return self.read_job()
        except MalformedJob:
            return None

    def read_job(self, max_bytes: int | None = None) -> dict[str, Any]:
        """The body as a job's JSON object, or :class:`~tqadmin.plugin.bodies.MalformedJob` saying why it
        is not one: the one reading of a body, for the worker (with its ``--max-payload-bytes``) and the
        admin face alike."""
        if self.undecodable is not None:
            raise MalformedJob("malformed", self.undecodable)
        return job_object(self.body, max_bytes=max_bytes)

    def to_json(self) -> dict[str, Any]:
        """JSONL export form: UTF-8 text bodies as text, anything else base64, so bytes round-trip."""
        try:
            body: str = self.body.decode("utf-8")
            encoding = "utf-8"
        except UnicodeDecodeError:
            body = base64.b64encode(self.body).decode("ascii")
            encoding = "base64"
        return {
            "id": self.id,
            "body": body,
            "body_encoding": encoding,
            "headers": _jsonable(dict(self.headers)),
            "properties": _jsonable(dict(self.properties)),
            "redelivered": self.redelivered,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        """Inverse of :meth:`to_json`; raises ``ValueError`` with a readable reason on a bad line."""
        if not isinstance(data, Mapping) or "body" not in data:
            raise ValueError("each line must be a JSON object with a 'body'")
        encoding = data.get("body_encoding", "utf-8")
        raw = data["body"]
        if not isinstance(raw, str):
            raise ValueError("'body' must be a string")
        if encoding == "base64":
            body = base64.b64decode(raw, validate=True)
        elif encoding == "utf-8":
            body = raw.encode("utf-8")
        else:
            raise ValueError(f"unknown body_encoding {encoding!r}")
        headers = data.get("headers") or {}
        properties = data.get("properties") or {}
        if not isinstance(headers, Mapping) or not isinstance(properties, Mapping):
            raise ValueError("'headers' and 'properties' must be objects")
        # Files exported before the contract was broker-neutral carry AMQP's routing key and exchange at
        # the top level: they are the broker's metadata, so they join the properties.
        legacy = {k: data[k] for k in LEGACY_PROPERTY_KEYS if k in data and k not in properties}
        message_id = data.get("id")
        return cls(
            body=body,
            headers=dict(headers),
            properties={**properties, **legacy},
            id=str(message_id) if message_id is not None else None,
            redelivered=bool(data.get("redelivered", False)),
        )


@dataclass(frozen=True, slots=True)
class PeekResult:
    """Messages looked at without consuming them, and what the look cost on this broker.

    ``delivery_limit`` is the number of deliveries after which the broker itself drops or dead-letters a
    message of this queue (a quorum queue's delivery-limit, an SQS redrive policy's maxReceiveCount), when
    the queue has one: with :attr:`Message.delivery_count` it tells how close a look brings a message to it.
    """

    queue: str
    messages: tuple[Message, ...]
    cost: str
    delivery_limit: int | None = None


@dataclass(frozen=True, slots=True)
class DeathRecord:
    """One time the broker itself dead-lettered a message (RabbitMQ's ``x-death``, for instance), as the
    plugin reads it from the message: the queue it died in, why, how often, and when (ISO 8601, if known).

    tqadmin's own worker writes the ``x-tq-*`` headers instead; these records explain the messages that
    died in the broker without a tqadmin worker (expired, rejected by another framework, over a limit).
    """

    queue: str | None
    reason: str | None
    count: int | None = None
    at: str | None = None
    details: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class ActionReport:
    """The outcome of an admin action, printed as the ``--json`` document and written to the audit log."""

    action: str
    source: str | None = None
    target: str | None = None
    matched: int = 0
    moved: int = 0
    purged: int = 0
    failed: int = 0
    dry_run: bool = False
    not_done: tuple[str, ...] = ()
    detail: str = ""

    @property
    def count(self) -> int:
        return self.moved or self.purged or self.matched

    @property
    def complete(self) -> bool:
        return self.failed == 0 and not self.not_done

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"action": self.action, "source": self.source, "target": self.target}
        doc.update(matched=self.matched, moved=self.moved, failed=self.failed, dry_run=self.dry_run)
        if self.action == "purge":
            doc["purged"] = self.purged
        if self.not_done:
            doc["not_done"] = list(self.not_done)
        if self.detail:
            doc["detail"] = self.detail
        return doc


def _jsonable(value: Any) -> Any:
    """Headers may hold bytes, datetimes or decimals (AMQP field tables); make them JSON values."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"$base64": base64.b64encode(value).decode("ascii")}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)
