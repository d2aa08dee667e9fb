"""Messages of other frameworks built by the frameworks themselves, offline (no broker): for pure tests."""

from __future__ import annotations

from typing import Any

import dramatiq
from celery import Celery
from kombu.serialization import dumps

from tqadmin.plugin.models import Message

CELERY = Celery("capp", set_as_current=False)


def celery_message(task: str = "capp.add", task_id: str = "t-1", *args: Any, **kwargs: Any) -> Message:
    """A protocol 2 task message as Celery builds it before it reaches the broker."""
    built = CELERY.amqp.as_task_v2(task_id, task, args=args or (2, 3), kwargs=kwargs or {})
    _, _, body = dumps(built.body, serializer="json")
    return Message(body=body.encode(), headers=built.headers, properties=built.properties)


def dramatiq_message(actor: str = "charge", *args: Any, **options: Any) -> Message:
    """A Dramatiq message as its broker would store it; ``options`` as its middleware leaves them."""
    built = dramatiq.Message(
        queue_name="orders", actor_name=actor, args=args or ("o-1",), kwargs={}, options=options
    )
    return Message(body=built.encode())
