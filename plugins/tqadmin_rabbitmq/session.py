"""One asynchronous pika connection with one confirm-mode channel, run in the calling thread.

The publisher and the worker both need what pika's BlockingConnection cannot give: many confirms outstanding
at once, and an I/O loop that keeps serving heartbeats while other threads do the work. Subclasses get
:meth:`on_ready` when the channel is usable and :meth:`on_lost` when the connection or channel ended; the
loop returns from :meth:`run_once` after that, and the caller decides whether to reconnect.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import pika
from pika.channel import Channel

from tqadmin.errors import UsageError
from tqadmin.plugin.models import Message
from tqadmin_rabbitmq.codec import publish_properties
from tqadmin_rabbitmq.confirms import ConfirmTracker, Settled, Settlement
from tqadmin_rabbitmq.connection import connection_parameters, reset_while_connecting


@dataclass(frozen=True, slots=True)
class Addressed:
    """A message and where AMQP sends it: an exchange (``""`` is the default one) and a routing key."""

    exchange: str
    routing_key: str
    message: Message


class ConfirmSession:
    """Connect, open a confirm-mode channel, run the I/O loop until the session ends."""

    def __init__(self, url: str, timeout_s: float, name: str) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.name = name
        self.connection: pika.SelectConnection | None = None
        self.channel: Any = None  # a pika Channel while open
        self.tracker = ConfirmTracker()
        self.closing = False

    # -- lifecycle -------------------------------------------------------------------------------------

    def run_once(self) -> BaseException | None:
        """Run one connection until it ends; the exception that ended it, ``None`` after :meth:`close`."""
        params = connection_parameters(self.url, self.timeout_s)
        params.client_properties = {"connection_name": self.name}
        self.closing = False
        self._ended: BaseException | None = None
        self.connection = pika.SelectConnection(
            params,
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_closed,
        )
        try:
            self.connection.ioloop.start()
        except ValueError as exc:  # raised out of the loop: the connection never came up
            self._ended = self._ended or reset_while_connecting(exc)
            with contextlib.suppress(Exception):
                self.connection.ioloop.close()
        return self._ended

    def close(self) -> None:
        """End the session (I/O thread only); :meth:`run_once` returns ``None``."""
        self.closing = True
        if self.connection is not None and self.connection.is_open:
            self.connection.close()
        elif self.connection is not None and not self.connection.is_closing:
            self.connection.ioloop.stop()

    def fail(self, exc: BaseException) -> None:
        """End the session with ``exc`` as its cause (I/O thread only)."""
        self._ended = exc
        self.closing = True
        if self.connection is not None and self.connection.is_open:
            self.connection.close()
        elif self.connection is not None:
            self.connection.ioloop.stop()

    def _on_open(self, connection: Any) -> None:
        connection.add_on_connection_blocked_callback(self._on_blocked)
        connection.add_on_connection_unblocked_callback(self._on_unblocked)
        connection.channel(on_open_callback=self._on_channel)

    def _on_open_error(self, connection: Any, exc: BaseException) -> None:
        self._ended = exc
        connection.ioloop.stop()

    def _on_channel(self, channel: Channel) -> None:
        self.tracker.fail_all()
        self.tracker = ConfirmTracker()  # delivery tags count from 1 again on every new channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(
            ack_nack_callback=lambda frame: self.tracker.on_confirm(frame.method),
            callback=lambda _frame: self._ready(channel),
        )

    def _ready(self, channel: Channel) -> None:
        self.channel = channel
        self.on_ready(channel)

    def _on_return(self, _channel: Any, _method: Any, properties: Any, _body: bytes) -> None:
        self.tracker.on_return(properties.message_id)

    def _on_channel_closed(self, _channel: Any, exc: BaseException) -> None:
        self.channel = None
        self.tracker.fail_all()
        if not self.closing and self._ended is None:
            self._ended = exc
        # One channel per connection: end the connection too, so on_lost runs once, in _on_closed.
        if self.connection is not None and self.connection.is_open:
            self.connection.close()

    def _on_closed(self, connection: Any, exc: BaseException) -> None:
        self.channel = None
        self.tracker.fail_all()
        if not self.closing and self._ended is None:
            self._ended = exc
        self.on_lost(self._ended or exc)
        connection.ioloop.stop()

    def _on_blocked(self, _connection: Any, _frame: Any) -> None:
        self.on_blocked(True)

    def _on_unblocked(self, _connection: Any, _frame: Any) -> None:
        self.on_blocked(False)

    # -- for subclasses ----------------------------------------------------------------------------------

    def publish(self, out: Addressed, on_settled: Settled, due_at_s: float | None = None) -> None:
        """Publish on the confirm channel (I/O thread only); ``on_settled`` is called once with its fate."""
        assert self.channel is not None
        try:
            properties = publish_properties(out.message, due_at_s)
        except UsageError:  # a header AMQP cannot carry: refused before anything is sent
            on_settled(Settlement.NACKED)
            return
        self.channel.basic_publish(
            out.exchange, out.routing_key, out.message.body, properties, mandatory=True
        )
        self.tracker.published(properties.message_id or "", on_settled)

    def on_ready(self, channel: Channel) -> None:
        """The confirm channel is open."""

    def on_lost(self, exc: BaseException) -> None:
        """The channel or connection ended (unsettled messages were already reported ``LOST``)."""

    def on_blocked(self, blocked: bool) -> None:
        """The broker blocked or unblocked this connection (a resource alarm)."""
