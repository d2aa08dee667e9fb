"""Windowed confirmed publishing over one asynchronous connection, reconnecting when it drops.

Up to ``window`` messages are outstanding at once and settled as the broker confirms them (often many per
``Basic.Ack``), which is what makes this several times faster than a publish-and-wait-each loop. When the
connection drops, the messages sent and not confirmed go back to the front of the line and are sent again on a
new connection (a duplicate at worst; the worker's completion store absorbs it). A resource alarm that blocks
the connection for longer than ``timeout_s`` ends the run (pika's ``blocked_connection_timeout``), as does a
broker that stops confirming for that long: the rest is reported unknown, never waited for forever.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pika.exceptions as pe

from tqadmin.errors import Blocked, ConnectTimeout, Nacked, NotAuthorized, TqadminError, Unroutable
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.transport import Outcome, PublishResult
from tqadmin.show.masking import mask_url
from tqadmin_rabbitmq.confirms import Settlement
from tqadmin_rabbitmq.connection import translate
from tqadmin_rabbitmq.session import Addressed, ConfirmSession

WATCHDOG_S = 0.25
REUSE_WITHIN_S = (
    5.0  # well inside any heartbeat timeout: the I/O loop (and so the heartbeat) stops between runs
)

NOT_FOUND = 404


class PublishRun(ConfirmSession):
    """One ``publish`` call: its messages, their outcomes, and the connection(s) it took.

    The connection stays open after the run, for the next one to :meth:`load` (a paced publish comes in
    batches a tenth of a second apart: a connection each would cost more than the batch); one idle for
    longer than :data:`REUSE_WITHIN_S` is closed and a new one opened, and :meth:`shutdown` closes it."""

    def __init__(self, url: str, timeout_s: float, messages: Sequence[Addressed], window: int) -> None:
        super().__init__(url, timeout_s, "tqadmin-publish")
        self.pump_scheduled = False
        self.blocked = False
        self.idle_since = 0.0
        self.retrying = Retrying()  # reconnects, given up once they have failed for ``timeout_s``
        self.load(messages, window)

    def load(self, messages: Sequence[Addressed], window: int) -> None:
        """Start a new run with ``messages`` (on the connection of the last one, while it is open)."""
        self.messages = messages
        self.window = max(1, window)
        self.outcomes: list[Outcome | None] = [None] * len(messages)
        self.sent: set[int] = set()
        self.todo: deque[int] = deque(range(len(messages)))
        self.in_flight: dict[int, None] = {}
        self.error: TqadminError | None = None
        self.fatal = False
        self.dropped = False  # the broker closed the channel for a missing exchange: nothing sent got through
        self.last_progress = time.monotonic()
        self.retrying.succeeded()

    def run(self) -> PublishResult:
        while self.todo or self.in_flight:
            ended = self._resume() if self._reusable() else self.run_once()
            if self.fatal or ended is None:
                break
            if self.channel_opened_once:
                self.retrying.succeeded()
            delay = self.retrying.failed()
            if self.retrying.failing_for() > self.timeout_s:
                self.error = self.error or translate(ended, self.url)
                break
            self.retrying.wait(delay)
        return self._result()

    def shutdown(self) -> None:
        """Close the connection kept between runs, waiting for the broker's answer at most ``timeout_s``."""
        connection = self.connection
        if connection is None or not connection.is_open:
            return
        try:
            timer = connection.ioloop.call_later(self.timeout_s, connection.ioloop.stop)
            self.close()
            connection.ioloop.start()  # until the close is done (``_on_closed`` stops it) or the timer
            connection.ioloop.remove_timeout(timer)
        except Exception:  # noqa: S110 - a connection that breaks while closing is closed
            pass

    def _reusable(self) -> bool:
        connection = self.connection
        if connection is None or self.channel is None or not connection.is_open:
            return False
        if time.monotonic() - self.idle_since <= REUSE_WITHIN_S:
            return True
        self.shutdown()  # idle too long: its heartbeats were not served, the broker may have dropped it
        return False

    def _resume(self) -> BaseException | None:
        """Run on the open connection until this run's messages are settled, as :meth:`run_once` does."""
        assert self.connection is not None
        self._ended = None
        self.channel_opened_once = True
        self.connection.ioloop.call_later(0, self._pump)
        self.connection.ioloop.start()
        return self._ended

    def _result(self) -> PublishResult:
        outcomes = tuple(
            o
            if o is not None
            else (Outcome.UNKNOWN if i in self.sent and not self.dropped else Outcome.FAILED)
            for i, o in enumerate(self.outcomes)
        )
        error = self.error
        if error is None and not all(o is Outcome.CONFIRMED for o in outcomes):
            error = ConnectTimeout(f"publishing to RabbitMQ at {mask_url(self.url)} did not finish")
        return PublishResult(outcomes, error)

    # -- session hooks ------------------------------------------------------------------------------------

    def run_once(self) -> BaseException | None:
        self.channel_opened_once = False
        return super().run_once()

    def on_ready(self, channel: Any) -> None:
        self.channel_opened_once = True
        self.last_progress = time.monotonic()
        assert self.connection is not None
        self.connection.ioloop.call_later(WATCHDOG_S, self._watchdog)
        self._pump()

    def on_lost(self, exc: BaseException) -> None:
        # Unsettled ones were reported LOST by the tracker and put back in ``todo``; decide if that is final.
        if self.closing and self._ended is None:
            return
        err = translate(exc, self.url)
        transient = pe.AMQPConnectionError | pe.StreamLostError | OSError | pe.ConnectionClosedByBroker
        if (
            isinstance(exc, pe.ConnectionBlockedTimeout | pe.ChannelClosedByBroker)
            or isinstance(err, NotAuthorized)
            or not isinstance(exc, transient)
        ):
            self.error = self.error or err
            self.fatal = True
            # One run publishes to one exchange, so a 404 on its channel means every message sent was dropped.
            self.dropped = isinstance(exc, pe.ChannelClosedByBroker) and exc.reply_code == NOT_FOUND

    # -- sending --------------------------------------------------------------------------------------------

    def _pump(self) -> None:
        self.pump_scheduled = False
        if self.channel is None or self.closing:
            return
        while self.todo and len(self.in_flight) < self.window:
            index = self.todo.popleft()
            self.in_flight[index] = None
            self.sent.add(index)
            self.publish(self.messages[index], self._settler(index))
        if not self.todo and not self.in_flight:
            self.idle_since = time.monotonic()
            assert self.connection is not None
            self.connection.ioloop.stop()  # the run is done; the connection stays for the next

    def _schedule_pump(self, delay_s: float) -> None:
        if not self.pump_scheduled and self.connection is not None:
            self.pump_scheduled = True
            self.connection.ioloop.call_later(delay_s, self._pump)

    def _settler(self, index: int) -> Callable[[Settlement], None]:
        return lambda settlement: self._settled(index, settlement)

    def _settled(self, index: int, settlement: Settlement) -> None:
        self.in_flight.pop(index, None)
        self.last_progress = time.monotonic()
        if settlement is Settlement.LOST:
            self.todo.appendleft(index)
            return
        if settlement is Settlement.CONFIRMED:
            self.outcomes[index] = Outcome.CONFIRMED
        else:
            self.outcomes[index] = Outcome.FAILED
            self.error = self.error or self._refusal(settlement, self.messages[index])
        if not self.pump_scheduled:
            self._schedule_pump(0)

    def _refusal(self, settlement: Settlement, out: Addressed) -> TqadminError:
        where = f"exchange {out.exchange or '(default)'!r} with routing key {out.routing_key!r}"
        if settlement is Settlement.RETURNED:
            return Unroutable(f"job {out.message.id} was unroutable: no queue is bound to {where}")
        return Nacked(f"RabbitMQ nacked job {out.message.id} sent to {where}: it was not stored")

    def on_blocked(self, blocked: bool) -> None:
        self.blocked = blocked

    def _watchdog(self) -> None:
        if self.channel is None or self.closing or self.connection is None:
            return
        if self.in_flight and time.monotonic() - self.last_progress > self.timeout_s:
            where = f"RabbitMQ at {mask_url(self.url)}"
            if self.blocked:
                alarm = "a memory or disk alarm: see `tqadmin queues` for alarms"
                self.error = Blocked(f"{where} blocks publishers ({alarm})")
            else:
                health = "check the broker's health and alarms"
                self.error = ConnectTimeout(f"{where} confirmed nothing for {self.timeout_s:g} s: {health}")
            self.fatal = True
            self.fail(self.error)
            return
        self.connection.ioloop.call_later(WATCHDOG_S, self._watchdog)
