"""Celery's workers on RabbitMQ, read without touching any queue or message of the user's.

Every Celery worker consumes its own ``<node>.celery.pidbox`` queue (which RabbitMQ deletes 10 s after its
consumer leaves), so the queue listing the admin face already fetched says which workers exist and whether
each is connected. With the profile's ``celery_events`` on, a listener binds one queue of its own to
Celery's ``celeryev`` topic exchange: ``tqadmin.celeryev.<random>``, exclusive and auto-delete (gone with
the listener's connection), ``x-max-length`` :data:`MAX_EVENTS` with ``drop-head`` (a listener that falls
behind loses the oldest events, never the broker's memory), consumed with automatic acks. That is the one
thing it declares, allowed in a read-only profile: it touches no user's queue or message. It never sends
``enable_events`` or any other control command; an exchange that does not exist yet (no Celery worker
with events ever ran) is waited for with the listeners' absent backoff (2.5 s doubling to 2 min), not
declared.

The queue's name is new for every connection: after a half-open disconnect the broker still holds the old
connection, and with it the old exclusive queue, until its heartbeat times out (minutes); declaring that
name again was refused (405 RESOURCE_LOCKED) until then, and the workers showed dead meanwhile. The
listener and what it heard are kept by :data:`~tqadmin.plugin.kit.listening.KEPT` beyond the admin that
started them, so an admin dropped after a read error and opened again finds the same figures.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.frameworks.celery_events import CeleryWatch, celery_node
from tqadmin.frameworks.decoding import as_text, count
from tqadmin.frameworks.summary import CELERY
from tqadmin.plugin.base import BrokerConfig
from tqadmin.plugin.kit.listening import KEPT, Deliver, Listener, NothingToHear
from tqadmin.plugin.workers import WorkerReading
from tqadmin_rabbitmq.connection import connect, translated

PIDBOX_SUFFIX = ".celery.pidbox"
EVENT_EXCHANGE = "celeryev"
MAX_EVENTS = 10_000


class EventStream:
    """Celery's event stream on one vhost: the watch its kept listener feeds, through a queue named anew
    for every connection (:attr:`queue`: the current one's)."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self.watch = CeleryWatch()
        self.queue: str | None = None
        self.listener = Listener("Celery events on RabbitMQ", self._consume, self.watch.feed_body)

    def close(self) -> None:
        self.listener.close()

    def _consume(self, stop: threading.Event, deliver: Deliver) -> None:
        queue = f"tqadmin.celeryev.{uuid.uuid4().hex[:12]}"
        connection = connect(self._config.url, self._config.timeout_s)
        try:
            with translated(self._config.url, queue):
                channel = connection.channel()
                _require_event_exchange(channel)
                arguments = {"x-max-length": MAX_EVENTS, "x-overflow": "drop-head"}
                channel.queue_declare(queue, exclusive=True, auto_delete=True, arguments=arguments)
                channel.queue_bind(queue, EVENT_EXCHANGE, routing_key="#")
                channel.basic_consume(queue, lambda _c, _m, _p, body: deliver(body), auto_ack=True)
                self.queue = queue
                while not stop.is_set():
                    connection.process_data_events(time_limit=0.5)
        finally:
            if connection.is_open:
                connection.close()


class CeleryWorkers:
    def __init__(self, config: BrokerConfig, wall: Callable[[], float] = time.time) -> None:
        self._config = config
        self._wall = wall
        self._key = ("celery events on RabbitMQ", config.url)
        self.events = KEPT.take(self._key, lambda: EventStream(config)) if config.celery_events else None

    @property
    def queue(self) -> str | None:
        """The listener's queue on its current connection."""
        return None if self.events is None else self.events.queue

    def read(self, queue_items: Sequence[Mapping[str, Any]]) -> WorkerReading:
        connected = {
            node.removesuffix(PIDBOX_SUFFIX): bool(count(item.get("consumers")))
            for item in queue_items
            if (node := as_text(item.get("name"))) and node.endswith(PIDBOX_SUFFIX)
        }
        if self.events is None:
            workers = tuple(celery_node(node, consumed=up) for node, up in sorted(connected.items()))
            return WorkerReading(workers)
        self.events.listener.listening()
        watch = self.events.watch
        workers = watch.workers(self._wall(), connected)
        return WorkerReading(
            workers, (), {CELERY: watch.task_stats()}, {CELERY: watch.wait_from}, {CELERY: watch.folded}
        )

    def close(self) -> None:
        """Let the listener go: :data:`~tqadmin.plugin.kit.listening.KEPT` keeps it for the next admin."""
        if self.events is not None:
            self.events = None
            KEPT.release(self._key)


def _require_event_exchange(channel: Any) -> None:
    """Celery's event exchange, looked up and never declared: one that does not exist yet means no worker
    with task events ran on this vhost, said as such (the listener looks again with its absent backoff)."""
    import pika.exceptions

    try:
        channel.exchange_declare(EVENT_EXCHANGE, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        if exc.reply_code != 404:
            raise
        raise NothingToHear(
            f"Celery's event exchange {EVENT_EXCHANGE!r} does not exist yet: no Celery worker with task"
            " events (-E) has run on this vhost"
        ) from None
