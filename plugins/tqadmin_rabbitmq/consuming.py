"""The worker's side of RabbitMQ: consume with manual acks while jobs run in other threads.

The I/O loop runs in one thread (the worker process's main thread) and is the only one that touches pika;
job threads hand it acks, retries and dead-letters through ``add_callback_threadsafe``. Acks are batched: a
job thread appends to a list and wakes the loop only when no wake-up is pending, so a busy worker pays one
wake-up per loop turn, not one per message.

Every delivery remembers the channel it came on. After a reconnect that channel is gone and the broker has
already requeued its unacked messages, so anything addressed to it is dropped rather than sent to the new
channel, where the same tag would name another message.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.backoff import reconnect_backoff
from tqadmin.errors import NotAuthorized
from tqadmin.plugin.transport import Consumer, Inbound, Outgoing, dlq_name
from tqadmin_rabbitmq.confirms import Settlement
from tqadmin_rabbitmq.connection import translate
from tqadmin_rabbitmq.naming import tier_queue
from tqadmin_rabbitmq.session import DUE_MS, ConfirmSession

log = logging.getLogger("tqadmin.worker")

# Headers RabbitMQ adds when a delay queue dead-letters a message back: they grow with every retry.
_BROKER_HEADERS = frozenset(
    f"x-{k}"
    for k in (
        "death",
        *(f"{w}-death-{f}" for w in ("first", "last") for f in ("exchange", "queue", "reason")),
    )
)


class _Token:
    __slots__ = ("channel", "properties", "tag")

    def __init__(self, channel: Any, tag: int, properties: Any) -> None:
        self.channel = channel
        self.tag = tag
        self.properties = properties


class RabbitConsumer(ConfirmSession, Consumer):
    def __init__(self, url: str, timeout_s: float, queue: str, prefetch: int) -> None:
        super().__init__(url, timeout_s, f"tqadmin-worker {queue} pid {os.getpid()}")
        self.queue = queue
        self.prefetch = prefetch
        self._lock = threading.Lock()
        self._acks: list[tuple[Any, int, bool]] = []
        self._flush_pending = False
        self._stop = threading.Event()
        self._drained = threading.Event()
        self._consumer_tag: str | None = None
        self._on_message: Callable[[Inbound], None] = lambda _m: None
        self._opened = False

    # -- the I/O thread ------------------------------------------------------------------------------------

    def run(self, on_message: Callable[[Inbound], None]) -> None:
        self._on_message = on_message
        backoff = reconnect_backoff()
        failures = 0
        while not self._stop.is_set():
            self._opened = False
            ended = self.run_once()
            if ended is None or self._stop.is_set():
                break
            error = translate(ended, self.url)
            if isinstance(error, NotAuthorized):
                raise error
            failures = 1 if self._opened else failures + 1
            delay = backoff.delay(failures)
            log.warning("connection lost (%s); reconnecting in %.1f s", error, delay)
            self._stop.wait(delay)

    def on_ready(self, channel: Any) -> None:
        self._opened = True
        with self._lock:
            self._flush_pending = False
        if self._stop.is_set():
            self._maybe_finish()
            return
        channel.basic_qos(prefetch_count=self.prefetch, callback=lambda _f: self._consume(channel))

    def _consume(self, channel: Any) -> None:
        if channel is self.channel and not self._stop.is_set():
            self._consumer_tag = str(channel.basic_consume(self.queue, self._deliver, auto_ack=False))

    def _deliver(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        headers = properties.headers or {}
        due_ms = headers.get(DUE_MS)
        published_at = due_ms / 1000 if isinstance(due_ms, int) else None
        self._on_message(
            Inbound(
                body=body,
                headers=headers,
                message_id=properties.message_id,
                redelivered=bool(method.redelivered),
                token=_Token(channel, method.delivery_tag, properties),
                published_at=published_at,
            )
        )

    def _flush(self) -> None:
        with self._lock:
            acks, self._acks = self._acks, []
            self._flush_pending = False
        channel = self.channel
        for ch, tag, requeue in acks:
            if ch is channel and ch.is_open:
                if requeue:
                    ch.basic_nack(tag, requeue=True)
                else:
                    ch.basic_ack(tag)
        self._maybe_finish()

    def _maybe_finish(self) -> None:
        if self._stop.is_set() and self._drained.is_set() and not self._acks and not self.tracker:
            self.close()

    def _cancel(self) -> None:
        if self.channel is not None and self.channel.is_open and self._consumer_tag:
            self.channel.basic_cancel(self._consumer_tag)
        self._maybe_finish()

    # -- any thread ------------------------------------------------------------------------------------

    def _call(self, fn: Callable[[], None]) -> bool:
        connection = self.connection
        if connection is None or not connection.is_open:
            return False
        try:
            connection.ioloop.add_callback_threadsafe(fn)
        except Exception:  # the loop closed under us: the delivery will come back anyway
            return False
        return True

    def stop(self) -> None:
        self._stop.set()
        self._call(self._cancel)

    def drained(self) -> None:
        self._drained.set()
        if not self._call(self._flush):
            self._stop.set()

    def alive(self, message: Inbound) -> bool:
        token = message.token
        assert isinstance(token, _Token)
        return token.channel is self.channel and token.channel.is_open

    def ack(self, message: Inbound) -> bool:
        return self._queue_settle([message], requeue=False)

    def release(self, messages: Sequence[Inbound]) -> None:
        self._queue_settle(messages, requeue=True)

    def _queue_settle(self, messages: Sequence[Inbound], requeue: bool) -> bool:
        live = [m.token for m in messages if self.alive(m)]
        if not live:
            return False
        with self._lock:
            self._acks.extend((t.channel, t.tag, requeue) for t in live if isinstance(t, _Token))
            wake = not self._flush_pending
            self._flush_pending = True
        if wake and not self._call(self._flush):
            with self._lock:
                self._flush_pending = False
        return True

    def retry_later(
        self, message: Inbound, body: bytes, delay_s: float, headers: Mapping[str, Any] | None = None
    ) -> bool:
        own = {**_own_headers(message.headers), **(headers or {})}
        own[DUE_MS] = int((time.time() + delay_s) * 1000)
        # Delay 0 goes straight back to the work queue; others wait in their tier's delay queue.
        target = tier_queue(self.queue, delay_s) if delay_s > 0 else self.queue
        out = Outgoing(body, target, "", message.message_id, own)
        return self._publish_then_ack(message, out)

    def dead_letter(self, message: Inbound, headers: Mapping[str, Any]) -> bool:
        out = Outgoing(
            message.body,
            dlq_name(self.queue),
            "",
            message.message_id,
            {**_own_headers(message.headers), **headers},
        )
        return self._publish_then_ack(message, out)

    def _publish_then_ack(self, message: Inbound, out: Outgoing) -> bool:
        token = message.token
        assert isinstance(token, _Token)
        done = threading.Event()
        result = [False]

        def settled(outcome: Settlement) -> None:
            if outcome is Settlement.CONFIRMED and token.channel is self.channel and token.channel.is_open:
                token.channel.basic_ack(token.tag)
                result[0] = True
            elif outcome is not Settlement.LOST:
                log.error(
                    "could not store the copy of job %s in %s: %s",
                    out.message_id,
                    out.routing_key,
                    outcome.value,
                )
            done.set()

        def publish() -> None:
            if token.channel is not self.channel or not token.channel.is_open:
                done.set()
                return
            self.publish(out, settled)

        if not self.alive(message) or not self._call(publish):
            return False
        done.wait(self.timeout_s * 3)
        return result[0]


def _own_headers(headers: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in headers.items() if k not in _BROKER_HEADERS}
