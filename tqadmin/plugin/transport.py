"""The transport face of a broker plugin: what the reference publisher, worker and cron use.

Broker-neutral: a message is addressed to a queue; a retry takes any delay, which the plugin applies its own
way and within the precision it declares (:class:`~tqadmin.plugin.capabilities.TransportCapabilities`); each
plugin names its own dead-letter queue; a consumer can extend the lease of what it holds where deliveries are
leased; recovering a dead consumer's deliveries is the consumer's own business (a closed AMQP channel, an
expired visibility timeout or lease, a Redis pending entry claimed back), never the worker's.

The one rule every method keeps: nothing is acknowledged before its successor is durable. ``retry_later`` and
``dead_letter`` publish the copy with confirmation and only then ack the original, so a crash between the two
leaves a duplicate (which the completion store absorbs), never a loss. This module imports no driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from tqadmin.errors import ConnectError, TqadminError, UsageError
from tqadmin.plugin.base import Closing, Delivery
from tqadmin.plugin.capabilities import TransportCapabilities, option_flag
from tqadmin.plugin.models import Message
from tqadmin.plugin.pacing import Pacer

Outgoing = tuple[str, Message]
"""One message to publish and the queue it is addressed to."""


def publish_options(
    options: Mapping[str, str] | None, capabilities: TransportCapabilities, broker: str
) -> dict[str, str]:
    """The publish options given, once every one is known to ``capabilities``; an unknown one (an AMQP
    exchange on a broker without exchanges, a typo) is a usage error (exit 2) naming ``broker`` and the
    option's flag. The one refusal: each plugin's ``publish`` calls it, and so does ``tqadmin publish``
    before it sends anything, whatever the plugin."""
    given = dict(options or {})
    unknown = sorted(set(given) - capabilities.publish_option_names)
    if unknown:
        named = ", ".join(f"{name} ({option_flag(name)})" for name in unknown)
        raise UsageError(f"{broker} has no publish option {named}; address the messages to a queue alone")
    return given


class Outcome(StrEnum):
    """What became of one published message (the per-id report of ``tqadmin publish``)."""

    CONFIRMED = "confirmed"  # the broker took responsibility for it
    FAILED = "failed"  # refused (unroutable, nacked) or never sent
    UNKNOWN = "unknown"  # sent, but the connection ended before the broker answered


@dataclass(frozen=True, slots=True)
class PublishResult:
    """Outcomes in the order of the messages given, and the first error that explains the failures."""

    outcomes: tuple[Outcome, ...]
    error: TqadminError | None = None

    @property
    def all_confirmed(self) -> bool:
        return all(o is Outcome.CONFIRMED for o in self.outcomes)


class Consumer(ABC):
    """A consuming session on one queue. :meth:`run` drives the broker I/O in the calling thread (so a
    session's heartbeats are served however long a job runs in another thread); every other method is
    thread-safe and may be called from the threads that run jobs.

    A delivery this consumer no longer holds (its channel died, its lease passed to another consumer) is
    never acked or moved: the broker has already given it back. Methods return ``False`` then.

    Where deliveries are lost with a connection (an AMQP channel), the plugin calls :meth:`report_lost` when
    that happens, so the worker can give up at once what it holds for them (the claims of jobs waiting in the
    prefetch window) instead of letting their redelivered copies wait out those claims' leases.
    """

    _lost_listener: Callable[[], None] | None = None
    _turn_listener: Callable[[], None] | None = None

    def watch_lost(self, listener: Callable[[], None]) -> None:
        """Have ``listener`` called (in the I/O thread: it must only note the fact) each time deliveries
        handed out were lost at once, with a connection or channel; those for which :meth:`alive` is now
        ``False`` will come again, redelivered. Brokers that lease deliveries never call it: a lease
        outlives a connection, and one that runs out shows in :meth:`extend`."""
        self._lost_listener = listener

    def report_lost(self) -> None:
        """For plugins: deliveries handed out were just lost with the connection (see :meth:`watch_lost`)."""
        if self._lost_listener is not None:
            self._lost_listener()

    def watch_turns(self, listener: Callable[[], None]) -> None:
        """Have ``listener`` called (in the I/O thread: it must only note the time) at each turn of the I/O
        loop, and at least every few seconds while the loop is healthy, idle or waiting out a reconnect:
        the worker's heartbeat says when it last turned, so a loop that stopped turning (a driver stuck in
        a call) is seen while the heartbeat, written by another thread, stays fresh. A plugin that never
        reports leaves the loop unjudged, never judged stuck."""
        self._turn_listener = listener

    def report_turn(self) -> None:
        """For plugins: the I/O loop turned (see :meth:`watch_turns`)."""
        if self._turn_listener is not None:
            self._turn_listener()

    @abstractmethod
    def run(self, on_message: Callable[[Delivery], None]) -> None:
        """Consume until :meth:`stop` has drained, reconnecting with backoff when the connection drops.
        ``on_message`` is called in the I/O thread and must only hand the delivery on."""

    @abstractmethod
    def stop(self) -> None:
        """Stop fetching now; :meth:`run` returns once :meth:`drained` has been called and the pending
        settlements are flushed."""

    @abstractmethod
    def drained(self) -> None:
        """Tell :meth:`run` that no job is in flight any more (after :meth:`stop`)."""

    @abstractmethod
    def alive(self, delivery: Delivery) -> bool:
        """Whether the delivery is still this consumer's to settle."""

    @abstractmethod
    def ack(self, delivery: Delivery) -> bool:
        """Remove the delivery for good (it may be queued to the I/O thread and return at once)."""

    @abstractmethod
    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Give deliveries nobody started (or that could not be handled) back to the queue at once."""

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Keep holding ``deliveries`` (running and prefetched) for ``lease_s`` more seconds; returns those
        this consumer no longer holds. Where the broker holds deliveries for the session (RabbitMQ), there
        is nothing to extend."""
        return []

    @abstractmethod
    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        """Publish the body byte for byte (confirmed), with the original's headers updated by ``headers``,
        so that it comes back to this queue after ``delay_s`` (any delay: the plugin applies it within its
        declared precision), then ack the original; blocks until both happened."""

    @abstractmethod
    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        """Publish the body byte for byte, with the original's headers updated by ``headers``, to this
        queue's dead-letter queue (confirmed), then ack the original; blocks until both happened."""


class BrokerTransport(Closing):
    """The pipeline face of one broker; ``capabilities`` says how it applies delays and holds deliveries."""

    capabilities: ClassVar[TransportCapabilities]

    @abstractmethod
    def declare(self, queue: str) -> None:
        """Create what ``queue`` needs (the queue, its dead-letter queue, whatever the plugin uses to apply
        delays). A queue that exists with other settings (a quorum queue, a redrive policy) is used as is."""

    def publish(
        self,
        messages: Sequence[Outgoing],
        *,
        window: int = 256,
        rate: float | None = None,
        options: Mapping[str, str] | None = None,
    ) -> PublishResult:
        """Publish each ``(queue, message)`` durably and confirmed, with up to ``window`` confirms
        outstanding, at most ``rate`` a second; reconnect and republish what was not confirmed when the
        connection drops. ``options`` are addressing options the plugin declares in
        ``TransportCapabilities.publish_options`` (they replace the queue as the address). Never raises for
        a message's fate: the result says what became of each one.

        The pace is kept here, once for every plugin (:mod:`tqadmin.plugin.pacing`): a paced publish goes
        to :meth:`publish_now` in batches of about a tenth of a second, each when the pace allows. A batch
        that ended with the broker out of reach (a :class:`~tqadmin.errors.ConnectError`, after the
        plugin's own reconnects) ends the publish: the rest is not sent (``failed``)."""
        if not rate or not messages:
            return self.publish_now(messages, window=window, options=options)
        pacer = Pacer(rate)
        size = pacer.batch_size(window)
        outcomes: list[Outcome] = []
        error: TqadminError | None = None
        for start in range(0, len(messages), size):
            result = self.publish_now(messages[start : start + size], window=window, options=options)
            outcomes += result.outcomes
            error = error or result.error
            if isinstance(result.error, ConnectError):
                break
            pacer.took(len(result.outcomes))
        outcomes += [Outcome.FAILED] * (len(messages) - len(outcomes))
        return PublishResult(tuple(outcomes), error)

    @abstractmethod
    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        """:meth:`publish` without a pace: every message as fast as ``window`` allows. What a plugin
        writes; callers use :meth:`publish`, which keeps the pace once for every plugin."""

    @abstractmethod
    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        """A consuming session on ``queue`` (declared first). ``lease_s`` is how long a delivery stays this
        consumer's without :meth:`Consumer.extend` where deliveries are leased."""

    def consumer_warnings(self, queue: str, job_timeout_s: float | None) -> list[str]:
        """Settings of the broker that will cut a run of ``job_timeout_s`` short, said at start (RabbitMQ's
        ``consumer_timeout``, say); none by default."""
        return []
