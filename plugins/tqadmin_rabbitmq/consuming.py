"""The worker's side of RabbitMQ: consume with manual acks while jobs run in other threads.

The I/O loop runs in one thread (the worker process's main thread) and is the only one that touches pika;
job threads hand it acks, retries and dead-letters through ``add_callback_threadsafe``. Acks are batched: a
job thread appends to a list and wakes the loop only when no wake-up is pending, so a busy worker pays one
wake-up per loop turn, not one per message; and the acks of a turn go out as one ``multiple`` ack where
:class:`~tqadmin_rabbitmq.ackruns.AckRuns` finds that safe (no delivery still running or being retried below
it), one by one otherwise.

Every delivery remembers the channel it came on. After a reconnect that channel is gone and the broker has
already requeued its unacked messages, so anything addressed to it is dropped rather than sent to the new
channel, where the same tag would name another message. That is also how a dead consumer's deliveries are
recovered: by the broker, when its channel closes.

A retry goes to the delay queue of its tier (:mod:`.tiers`), declared on first use on this connection.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.errors import NotAuthorized
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.background import Background
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.models import Message, dlq_name
from tqadmin.plugin.transport import Consumer
from tqadmin.show.masking import shown
from tqadmin_rabbitmq.ackruns import AckRuns
from tqadmin_rabbitmq.codec import to_message
from tqadmin_rabbitmq.confirms import Settlement
from tqadmin_rabbitmq.connection import translate
from tqadmin_rabbitmq.deaths import without_broker_headers
from tqadmin_rabbitmq.naming import tier_queue
from tqadmin_rabbitmq.session import Addressed, ConfirmSession
from tqadmin_rabbitmq.tiers import LADDER
from tqadmin_rabbitmq.topology import tier_arguments

log = logging.getLogger("tqadmin.worker")

TURN_EVERY_S = 1.0  # how often pika's loop reports a turn (on a timer: deliveries may not come)


class _Token:
    __slots__ = ("channel", "tag")

    def __init__(self, channel: Any, tag: int) -> None:
        self.channel = channel
        self.tag = tag


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
        self._on_message: Callable[[Delivery], None] = lambda _m: None
        self._opened = False
        self._tiers_declared: set[str] = set()  # delay queues declared on the current connection
        self._open = AckRuns()  # the current channel's deliveries not settled yet (I/O thread only)
        self.background = Background()  # no thread of its own: it turns the loop's surprises into a fault
        self.retrying = Retrying(sleep=self._stop.wait)  # reconnects, cut short by a stop

    # -- the I/O thread ------------------------------------------------------------------------------------

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        self._on_message = on_message
        with self.background.io_loop("the RabbitMQ consumer's loop"):
            while not self._stop.is_set():
                self.report_turn()  # connecting, or back from a reconnect's wait
                self._opened = False
                ended = self.run_once()
                if ended is None or self._stop.is_set():
                    break
                error = translate(ended, self.url)
                if isinstance(error, NotAuthorized):
                    raise error
                if self._opened:  # it was consuming: this is the first failure of a new outage
                    self.retrying.succeeded()
                delay = self.retrying.failed()
                log.warning("connection lost (%s); reconnecting in %.1f s", error, delay)
                self.retrying.wait(delay)

    def on_ready(self, channel: Any) -> None:
        self._opened = True
        self._tiers_declared.clear()  # someone may have deleted one while we were away: declare again
        self._open = AckRuns()  # tags count from 1 again on the new channel
        with self._lock:
            self._flush_pending = False
        if self._stop.is_set():
            self._maybe_finish()
            return
        channel.basic_qos(prefetch_count=self.prefetch, callback=lambda _f: self._consume(channel))
        self._turned(self.connection)

    def _turned(self, connection: Any) -> None:
        """Report a turn of pika's loop, and again every :data:`TURN_EVERY_S` while ``connection`` lasts (one
        channel a connection: ``on_ready`` runs once for each, so one timer runs at a time)."""
        self.report_turn()
        if connection is self.connection and connection is not None and connection.is_open:
            connection.ioloop.call_later(TURN_EVERY_S, lambda: self._turned(connection))

    def on_lost(self, exc: BaseException) -> None:
        self.report_lost()  # the broker requeued every unacked delivery of the channel: they come again

    def _consume(self, channel: Any) -> None:
        if channel is self.channel and not self._stop.is_set():
            self._consumer_tag = str(channel.basic_consume(self.queue, self._deliver, auto_ack=False))

    def _deliver(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        message = to_message(method, properties, body)
        tag = method.delivery_tag
        self._open.delivered(tag)  # deliveries come on the current channel only: it is the one open
        self._on_message(Delivery(message, _Token(channel, tag)))

    def _flush(self) -> None:
        with self._lock:
            acks, self._acks = self._acks, []
            self._flush_pending = False
        channel = self.channel
        if channel is not None and channel.is_open:
            tags: list[int] = []
            for ch, tag, requeue in acks:  # what is addressed to a closed channel is the broker's again
                if ch is not channel:
                    continue
                if requeue:  # first, so that no multiple ack can reach a delivery given back
                    channel.basic_nack(tag, requeue=True)
                    self._open.settled(tag)
                else:
                    tags.append(tag)
            up_to, alone = self._open.acked(tags)
            if up_to is not None:
                channel.basic_ack(up_to, multiple=True)
            for tag in alone:
                channel.basic_ack(tag)
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

    def alive(self, delivery: Delivery) -> bool:
        token = delivery.token
        assert isinstance(token, _Token)
        return token.channel is self.channel and token.channel.is_open

    def ack(self, delivery: Delivery) -> bool:
        return self._queue_settle([delivery], requeue=False)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self._queue_settle(deliveries, requeue=True)

    def _queue_settle(self, deliveries: Sequence[Delivery], requeue: bool) -> bool:
        live = [d.token for d in deliveries if self.alive(d)]
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

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        # A delay that rounds to no tier goes straight back to the work queue; others wait in their tier.
        tier_ms = LADDER.tier_ms_for(delay_s)
        target = tier_queue(self.queue, tier_ms / 1000) if tier_ms else self.queue
        out = Addressed("", target, self._copy(delivery.message, headers))
        return self._publish_then_ack(delivery, out, time.time() + tier_ms / 1000, tier_ms)

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        out = Addressed("", dlq_name(self.queue), self._copy(delivery.message, headers))
        return self._publish_then_ack(delivery, out, None, 0)

    @staticmethod
    def _copy(message: Message, headers: Mapping[str, Any]) -> Message:
        """The body and properties untouched but a per-message expiry (a dead letter must not expire, nor a
        retry leave its tier early); the application's headers updated with ``headers`` (RabbitMQ's own
        ``x-death`` and friends grow with every trip through a delay queue, so they stay behind)."""
        own = {**without_broker_headers(message.headers), **headers}
        properties = {k: v for k, v in message.properties.items() if k != "expiration"}
        return Message(message.body, own, properties, message.id)

    def _publish_then_ack(
        self, delivery: Delivery, out: Addressed, due_at_s: float | None, tier_ms: int
    ) -> bool:
        token = delivery.token
        assert isinstance(token, _Token)
        done = threading.Event()
        result = [False]

        def settled(outcome: Settlement) -> None:
            if outcome is Settlement.CONFIRMED and token.channel is self.channel and token.channel.is_open:
                token.channel.basic_ack(token.tag)
                self._open.settled(token.tag)
                result[0] = True
            elif outcome is not Settlement.LOST:
                log.error(
                    "could not store the copy of job %s in %s: %s; the original goes back to %s",
                    shown(out.message.id or "?"),
                    out.routing_key,
                    outcome.value,
                    self.queue,
                )
                self._tiers_declared.discard(out.routing_key)
                if token.channel is self.channel and token.channel.is_open:
                    token.channel.basic_nack(token.tag, requeue=True)
                    self._open.settled(token.tag)
            done.set()

        def publish() -> None:
            if token.channel is not self.channel or not token.channel.is_open:
                done.set()
            elif tier_ms and out.routing_key not in self._tiers_declared:
                self.channel.queue_declare(
                    out.routing_key,
                    durable=True,
                    arguments=tier_arguments(self.queue, tier_ms),
                    callback=lambda _frame: declared(),
                )
            else:
                self.publish(out, settled, due_at_s)

        def declared() -> None:
            self._tiers_declared.add(out.routing_key)
            publish()

        if not self.alive(delivery) or not self._call(publish):
            return False
        done.wait(self.timeout_s * 3)
        return result[0]
