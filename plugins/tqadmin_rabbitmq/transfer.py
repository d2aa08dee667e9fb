"""The AMQP side of safe transfers: consume with a prefetch window, publish with a window of confirms.

Why not pika's confirm mode on a BlockingChannel: it waits for each confirm before the next publish, a round
trip (and a broker fsync) per message. Here confirms are enabled on the channel implementation with our own
callback, a whole batch is published, and we wait once for the broker to confirm all of it; a ``basic.return``
(``mandatory``) or a ``basic.nack`` in the batch fails the batch, so none of its originals is acked.

Messages the caller holds back (not matching a filter) stay unacked until the session closes, when they are
requeued together; RabbitMQ puts requeued messages back in their original position where it can. A consumer's
prefetch counts held messages too, so when the current consumer's window is full of held messages a fresh
consumer is started on the same channel (the old one's deliveries stay unacked and ours).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pika
import pika.spec

from tqadmin.errors import BrokerError, Nacked, Unroutable
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.sessions import HeldSession
from tqadmin.plugin.models import Message
from tqadmin.show.masking import mask_url
from tqadmin_rabbitmq.codec import to_message, to_properties
from tqadmin_rabbitmq.connection import connect, translate, translated

DEFAULT_WINDOW = 500
_IDLE_WAIT_S = 0.2


@dataclass(frozen=True, slots=True)
class _Token:
    consumer: str
    tag: int


def close_quietly(connection: pika.BlockingConnection) -> None:
    """Close a connection that may already be gone; the broker requeues whatever it left unacked."""
    try:
        if connection.is_open:
            connection.close()
    except Exception:  # noqa: S110 - nothing left to save on a connection that is going away
        pass


class ConfirmedPublisher:
    """Publisher confirms on one channel with a window: publish a batch, then wait once for all of it."""

    def __init__(self, connection: pika.BlockingConnection, channel: Any, url: str, timeout_s: float) -> None:
        self._connection = connection
        self._channel = channel
        self._url = url
        self._timeout_s = timeout_s
        self._published = 0  # the broker numbers published messages 1, 2, ... on a confirm channel
        self._pending: set[int] = set()  # numbers published and not yet acked or nacked
        self._nacked = 0
        self._returned: list[str] = []
        self._selected = False
        impl = channel._impl  # pika's BlockingChannel has no windowed confirm mode; its implementation does
        impl.add_on_return_callback(self._on_return)
        impl.confirm_delivery(ack_nack_callback=self._on_confirm, callback=self._on_select_ok)
        self._wait(lambda: self._selected, "enable publisher confirms")

    def publish(self, items: Sequence[tuple[str, Message]], exchange: str = "") -> None:
        """Publish every ``(routing key, message)`` and return when the broker confirmed all of them."""
        self._returned.clear()
        self._nacked = 0
        prepared = [(key, message.body, to_properties(message)) for key, message in items]
        for routing_key, body, properties in prepared:
            self._channel._impl.basic_publish(  # queued, flushed once by _wait below
                exchange=exchange,
                routing_key=routing_key,
                body=body,
                properties=properties,
                mandatory=True,
            )
            self._published += 1
            self._pending.add(self._published)
        self._wait(lambda: not self._pending, "confirm the published copies")
        where = f"RabbitMQ at {mask_url(self._url)}"
        if self._returned:
            names = ", ".join(sorted(set(self._returned))[:3])
            raise Unroutable(
                f"{where} returned {len(self._returned)} message(s) as unroutable: no queue named {names}"
                " (create it, or pick another target); their originals were left in place"
            )
        if self._nacked:
            raise Nacked(
                f"{where} refused {self._nacked} message(s) (queue full or broker error);"
                " their originals were left in place"
            )

    def _on_select_ok(self, _frame: Any) -> None:
        self._selected = True

    def _on_return(self, _channel: Any, method: pika.spec.Basic.Return, _props: Any, _body: bytes) -> None:
        self._returned.append(method.routing_key)

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        if method.multiple:
            settled = {n for n in self._pending if method.delivery_tag == 0 or n <= method.delivery_tag}
        else:
            settled = {method.delivery_tag} & self._pending
        self._pending -= settled
        if isinstance(method, pika.spec.Basic.Nack):
            self._nacked += len(settled)

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        """Process I/O until ``done()``; confirms arrive in impl callbacks, which do not wake
        ``process_data_events``, so we drive pika's own flush loop with a timer as the deadline."""
        expired: list[bool] = []
        impl = self._channel._impl
        ioloop = self._connection._impl.ioloop
        timer = ioloop.call_later(self._timeout_s, lambda: expired.append(True))
        try:
            with translated(self._url):
                self._connection._flush_output(lambda: done() or bool(expired) or not impl.is_open)
        finally:
            ioloop.remove_timeout(timer)
        if not impl.is_open and isinstance(impl._closing_reason, Exception):
            # The broker closed the channel (403 ACCESS_REFUSED, 404...): say why, not "no confirm in time".
            raise translate(impl._closing_reason, self._url)
        if not done():
            raise BrokerError(
                f"RabbitMQ at {mask_url(self._url)} did not {what} within {self._timeout_s:g} s:"
                " check the broker's alarms and load; nothing unconfirmed was acked"
            )


class AmqpTransferSession(HeldSession[_Token]):
    """One connection and one channel: consume ``queue`` with a prefetch window, publish with confirms."""

    def __init__(self, url: str, queue: str, timeout_s: float, window: int = DEFAULT_WINDOW) -> None:
        self._url = url
        self._queue = queue
        self._timeout_s = timeout_s
        self._window = window
        self._connection = connect(url, timeout_s)
        self._buffer: deque[Delivery] = deque()
        self._outstanding: dict[str, int] = {}  # consumer tag -> delivered and not yet settled
        self._consumer: str | None = None
        try:
            with translated(url, queue):
                self._channel = self._connection.channel()
                declared = self._channel.queue_declare(queue, passive=True)
                self._channel.basic_qos(prefetch_count=2 * window)
            self._publisher = ConfirmedPublisher(self._connection, self._channel, url, timeout_s)
        except BaseException:
            close_quietly(self._connection)
            raise
        super().__init__(int(declared.method.message_count))

    def take(self, want: int) -> Sequence[Delivery]:
        with translated(self._url, self._queue):
            self._fill(want)
        return [self._buffer.popleft() for _ in range(min(want, len(self._buffer)))]

    def token(self, delivery: Delivery) -> _Token:
        assert isinstance(delivery.token, _Token)
        return delivery.token

    def key(self, token: _Token) -> int:
        return token.tag

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        self._publisher.publish(items)

    def remove(self, tokens: Sequence[_Token]) -> None:
        tags = self._settled(tokens)
        impl = self._channel._impl  # queue the acks and flush once, not one socket write per ack
        with translated(self._url, self._queue):
            top = max(tags)
            if not any(t.tag < top for t in self.held.values()):
                impl.basic_ack(delivery_tag=top, multiple=True)
            else:
                for tag in tags:
                    impl.basic_ack(delivery_tag=tag)
            self._connection._flush_output()

    def give_back(self, tokens: Sequence[_Token]) -> None:
        impl = self._channel._impl
        with translated(self._url, self._queue):
            for tag in self._settled(tokens):
                impl.basic_nack(delivery_tag=tag, requeue=True)
            self._connection._flush_output()

    def give_back_all(self, tokens: Sequence[_Token]) -> None:
        """Everything still unacked on the channel (held back, or buffered beyond the count at start), back
        to the queue in delivery order; a connection that is gone has requeued them already."""
        try:
            if self._connection.is_open and self._channel.is_open:
                if self._consumer is not None:
                    self._channel.basic_cancel(self._consumer)  # else requeued messages come straight back
                self._channel.basic_nack(delivery_tag=0, multiple=True, requeue=True)
        except Exception:  # noqa: S110 - closing the connection requeues them anyway
            pass

    def disconnect(self) -> None:
        close_quietly(self._connection)

    def _settled(self, tokens: Sequence[_Token]) -> list[int]:
        """The delivery tags of ``tokens``, in order, no longer using up their consumer's prefetch."""
        for token in tokens:
            self._outstanding[token.consumer] -= 1
        return sorted(token.tag for token in tokens)

    def _fill(self, want: int) -> None:
        """Receive deliveries until ``want`` are buffered, or nothing more comes (drained or all held)."""
        idle_since = time.monotonic()
        while len(self._buffer) < want:
            if self._consumer is None or self._held_by_consumer() >= self._window:
                self._start_consumer()
            before = len(self._buffer)
            self._connection.process_data_events(time_limit=_IDLE_WAIT_S)
            if len(self._buffer) > before:
                idle_since = time.monotonic()
                continue
            if self._buffer:
                return
            ready = self._channel.queue_declare(self._queue, passive=True).method.message_count
            if ready == 0 or time.monotonic() - idle_since > self._timeout_s:
                return

    def _held_by_consumer(self) -> int:
        """Deliveries of the current consumer handed out and not settled: they use up its prefetch."""
        consumer = self._consumer
        buffered = sum(
            1 for d in self._buffer if isinstance(d.token, _Token) and d.token.consumer == consumer
        )
        return self._outstanding[consumer] - buffered if consumer is not None else 0

    def _start_consumer(self) -> None:
        if self._consumer is not None:
            self._channel.basic_cancel(self._consumer)
        self._consumer = self._channel.basic_consume(self._queue, self._on_delivery, auto_ack=False)
        self._outstanding[self._consumer] = 0

    def _on_delivery(
        self,
        _channel: Any,
        method: pika.spec.Basic.Deliver,
        props: pika.spec.BasicProperties,
        body: bytes,
    ) -> None:
        self._outstanding[method.consumer_tag] = self._outstanding.get(method.consumer_tag, 0) + 1
        self._buffer.append(
            Delivery(to_message(method, props, body), _Token(method.consumer_tag, method.delivery_tag))
        )
