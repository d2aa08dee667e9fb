"""Celery's task messages: protocol 2 (Celery 4 and later), on AMQP and inside kombu's Redis envelope, and
the older protocol 1 where it costs nothing.

- Protocol 2 keeps the facts in headers (``task``, ``id``, ``retries``, ``eta``, ``argsrepr``...) and the call
  in the body, ``[args, kwargs, embed]`` as JSON (or pickle, msgpack, YAML: then ``argsrepr``/``kwargsrepr``
  stand in, and the body is never decoded).
- On Redis kombu stores each message as a JSON envelope: ``{"body": <base64>, "headers": {...},
  "properties": {"body_encoding": "base64", "delivery_info": {...}, ...}, "content-type": ...}``; its
  ``delivery_info`` names the queue it was sent to (``routing_key``).
- Protocol 1 is one JSON object: ``{"task", "id", "args", "kwargs", "retries", "eta", ...}``.

Celery writes no failure into the message (that lives in its result backend) and no time it was sent.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tqadmin.frameworks.decoding import as_text, count, name, unbase64
from tqadmin.frameworks.parts import MessageParts
from tqadmin.frameworks.preview import call_preview, text_preview
from tqadmin.frameworks.summary import CELERY, JobSummary

ENVELOPE_KEYS = frozenset({"body", "headers", "properties"})


def read(parts: MessageParts) -> JobSummary | None:
    return protocol2(parts) or protocol1(parts) or _from_kombu_envelope(parts)


def protocol2(parts: MessageParts) -> JobSummary | None:
    headers = parts.headers
    task, task_id = name(headers.get("task")), name(headers.get("id"))
    if task is None or task_id is None:
        return None
    body = parts.json
    if isinstance(body, list) and len(body) == 3:
        args = call_preview(body[0], body[1])
    else:
        args = _repr_preview(headers.get("argsrepr"), headers.get("kwargsrepr"))
    return JobSummary(CELERY, id=task_id, task=task, args=args, retries=count(headers.get("retries")))


def protocol1(parts: MessageParts) -> JobSummary | None:
    body = parts.object
    if body is None or not isinstance(body.get("args"), list):
        return None
    task, task_id = name(body.get("task")), name(body.get("id"))
    if task is None or task_id is None:
        return None
    return JobSummary(
        CELERY,
        id=task_id,
        task=task,
        args=call_preview(body["args"], body.get("kwargs")),
        retries=count(body.get("retries")),
    )


def _from_kombu_envelope(parts: MessageParts) -> JobSummary | None:
    envelope = parts.object
    if envelope is None or not envelope.keys() >= ENVELOPE_KEYS:
        return None
    headers, properties = envelope["headers"], envelope["properties"]
    if not isinstance(headers, dict) or not isinstance(properties, dict):
        return None
    body = envelope_body(envelope)
    if body is None:
        return None
    inner = MessageParts(headers, body)
    summary = protocol2(inner) or protocol1(inner)
    delivery = properties.get("delivery_info")
    if summary is None or not isinstance(delivery, dict):
        return summary
    return replace(summary, sent_to=name(delivery.get("routing_key")))


def envelope_body(envelope: dict[str, Any]) -> bytes | None:
    """The message inside kombu's Redis envelope: ``body`` as base64 where ``properties`` say so."""
    properties = envelope.get("properties")
    if isinstance(properties, dict) and properties.get("body_encoding") == "base64":
        return unbase64(envelope.get("body"))
    text = as_text(envelope.get("body"))
    return text.encode("utf-8") if text is not None else None


def _repr_preview(args: Any, kwargs: Any) -> str | None:
    """Celery's own ``repr`` of the call: ``(2, 3)`` and ``{'z': 1}`` become ``2, 3, {'z': 1}``."""
    args_text, kwargs_text = as_text(args), as_text(kwargs)
    if args_text and args_text.startswith("(") and args_text.endswith(")"):
        args_text = args_text[1:-1].rstrip(",")
    shown = [text for text in (args_text, kwargs_text) if text and text != "{}"]
    return text_preview(", ".join(shown)) if shown else None
