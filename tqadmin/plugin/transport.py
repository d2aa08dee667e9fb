"""The transport face of a broker plugin: what the reference publisher, worker and cron use.

Defined by the pipeline work (issue 3): durable confirmed publishing, consuming with manual acks,
broker-scheduled retries, dead-lettering with a reason, and recovery of a dead consumer's in-flight messages.

The one rule every method keeps: nothing is acknowledged before its successor is durable. ``retry_later`` and
``dead_letter`` publish the copy with confirmation and only then ack the original, so a crash between the two
leaves a duplicate (which the completion store absorbs), never a loss. This module imports no driver.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tqadmin.errors import TqadminError
from tqadmin.plugin.base import Closing

TASK_EXCHANGE = "task_exchange"


def dlq_name(queue: str) -> str:
    """The dead-letter queue of ``queue`` on brokers whose names allow a dot (INTERFACE.md)."""
    return f"{queue}.dlq"


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to publish: the body untouched, where it goes, and its id and headers."""

    body: bytes
    routing_key: str
    exchange: str = TASK_EXCHANGE
    message_id: str | None = None
    headers: Mapping[str, Any] = field(default_factory=dict)


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


@dataclass(frozen=True, slots=True)
class Inbound:
    """A delivery being worked on. ``token`` is the plugin's handle (channel and tag on RabbitMQ).

    ``published_at`` is the epoch time the message was first published when the broker tells us (for the
    wait-time histogram), else ``None``.
    """

    body: bytes
    headers: Mapping[str, Any]
    message_id: str | None
    redelivered: bool
    token: object
    published_at: float | None = None


class Consumer(ABC):
    """A consuming session. :meth:`run` drives the broker I/O in the calling thread (so heartbeats are served
    however long a job runs in another thread); every other method is thread-safe and may be called from the
    threads that run jobs.

    A delivery whose channel has died is never acked or rejected: the broker has already put it back, and its
    tag would name a different message (or nothing) on the new channel. Methods return ``False`` then.
    """

    @abstractmethod
    def run(self, on_message: Callable[[Inbound], None]) -> None:
        """Consume until :meth:`stop` has drained, reconnecting with backoff when the connection drops.
        ``on_message`` is called in the I/O thread and must only hand the delivery on."""

    @abstractmethod
    def stop(self) -> None:
        """Stop fetching now; return prefetched deliveries nobody started; :meth:`run` returns once
        :meth:`drained` has been called and the pending acks are flushed."""

    @abstractmethod
    def drained(self) -> None:
        """Tell :meth:`run` that no job is in flight any more (after :meth:`stop`)."""

    @abstractmethod
    def alive(self, message: Inbound) -> bool:
        """Whether the delivery can still be acked (its channel is the current one and open)."""

    @abstractmethod
    def ack(self, message: Inbound) -> bool:
        """Remove the delivery for good (queued to the I/O thread; returns at once)."""

    @abstractmethod
    def release(self, messages: Sequence[Inbound]) -> None:
        """Give deliveries nobody started back to the queue."""

    @abstractmethod
    def retry_later(
        self, message: Inbound, body: bytes, delay_s: float, headers: Mapping[str, Any] | None = None
    ) -> bool:
        """Publish ``body`` (confirmed), with the original's headers plus ``headers``, so it comes back to the
        work queue after ``delay_s``, then ack the original; blocks until both happened. ``delay_s`` is 0
        (straight back) or one of the tiers given to ``declare``."""

    @abstractmethod
    def dead_letter(self, message: Inbound, headers: Mapping[str, Any]) -> bool:
        """Publish the body byte for byte, with its headers plus ``headers``, to the dead-letter queue
        (confirmed), then ack the original; blocks until both happened."""


class BrokerTransport(Closing):
    """The pipeline face of one broker, opened for one queue's producers or consumers."""

    @abstractmethod
    def declare(self, queue: str, retry_tiers_s: Sequence[float] = ()) -> None:
        """Declare what ``queue`` needs: the work queue bound to ``task_exchange``, its dead-letter queue and
        one delay queue per retry tier. A queue that exists with other arguments is used as it is."""

    @abstractmethod
    def publish(
        self,
        messages: Sequence[Outgoing],
        *,
        window: int = 256,
        rate: float | None = None,
    ) -> PublishResult:
        """Publish persistently and mandatorily with up to ``window`` confirms outstanding, at most ``rate``
        a second; reconnect and republish what was not confirmed when the connection drops. Never raises
        for a message's fate: the result says what became of each one."""

    @abstractmethod
    def consumer(self, queue: str, *, prefetch: int) -> Consumer:
        """A consuming session on ``queue`` (declared first)."""

    def recover(self, queue: str) -> int:
        """Return a dead consumer's in-flight messages to ``queue``; how many were returned.

        The default does nothing because brokers with consumer sessions (RabbitMQ) put back the unacked
        deliveries of a closed channel themselves; brokers with visibility timeouts override this.
        """
        return 0
