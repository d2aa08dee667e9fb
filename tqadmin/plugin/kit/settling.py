"""The acks and releases a leased consumer queued and its broker has not answered yet, written once.

A worker's job threads settle one delivery at a time; a broker takes them best in batches (SQS's ten a
call, a Redis pipeline, one SQLite transaction). :class:`Settles` keeps what was queued until the broker
answered it, for :class:`~tqadmin.plugin.kit.leased.LeasedConsumer`:

- **batches**: at most ``batch`` acks and as many releases a call; a batch goes once it is full, once its
  oldest settle waited ``linger_s`` (so a lone ack is not held for nine others), once a caller waits for an
  answer, and once the consumer is drained;
- **resent until it goes**: a batch the broker could not answer is put back in front and sent again after
  the shared capped backoff (:class:`~tqadmin.plugin.kit.retrying.Retrying`): a delivery given back too late
  is still ours, and only its lease's end would free it; after the drain, a batch that keeps failing is given
  up after :data:`TRIES_WHEN_DRAINED` tries (those jobs run again, the completion store absorbs them);
- **renewed meanwhile**: an ack queued or in flight stays in :meth:`Settles.acking` until the broker
  answers it, so the consumer's ``extend`` keeps its lease through an outage rather than let it run out and
  the job run again elsewhere;
- **answers**: the acks the broker refused (passed to another consumer) are told apart from those it took,
  and a caller that must know (a retry's original, deleted once its copy is confirmed) waits for its own
  answer up to ``wait_s``.

The settles share the consumer's condition (one lock for the window and the queue, one wake-up for both).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Generic, TypeVar

from tqadmin.errors import TqadminError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.background import Background
from tqadmin.plugin.kit.retrying import Retrying

log = logging.getLogger("tqadmin.worker")

T = TypeVar("T")
"""The broker's token of a delivery (a receipt, an entry id, a lease)."""

TRIES_WHEN_DRAINED = 5  # after the drain, settles that keep failing are given up (those jobs run again)
IDLE_WAIT_S = 0.5  # how long the settler thread sleeps with nothing queued before it looks again

Send = Callable[[Sequence[T], Sequence[T]], Collection[T]]
"""One batch of acks and releases to the broker; returns the acks it refused. Raises ``TqadminError`` when
the broker could not answer (the batch is sent again)."""


class Answer:
    """One queued ack: its delivery (renewed until answered) and, once answered, whether the broker
    took it."""

    __slots__ = ("delivery", "done", "taken")

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery
        self.taken = False
        self.done = threading.Event()


class Settles(Generic[T]):
    """Queued acks and releases of one consumer, until its broker answered them."""

    def __init__(
        self,
        cond: threading.Condition,
        *,
        batch: int,
        linger_s: float = 0.0,
        wait_s: float = 120.0,
        broker_name: str = "the broker",
    ) -> None:
        self.batch = max(1, batch)
        self.linger_s = linger_s
        self.wait_s = wait_s
        self.broker_name = broker_name
        self.retrying = Retrying()  # the settler thread's: it goes on sending after a stop
        self.settled = threading.Event()  # the settler thread sent everything and ended
        self._cond = cond
        self._acks: list[T] = []
        self._releases: list[T] = []
        self._since = 0.0  # when the oldest settle queued now was queued (the linger's clock)
        self._waiters = 0  # callers waiting for an answer: their batch goes at once
        self._acking: dict[T, Answer] = {}  # acks queued or in flight, renewed until answered

    # -- any thread: queueing -------------------------------------------------------------------------

    def ack(self, token: T, delivery: Delivery) -> Answer:
        """Queue an ack of ``token``; its :class:`Answer` is set once the broker answered."""
        answer = Answer(delivery)
        with self._cond:
            self._queued_now()
            self._acks.append(token)
            self._acking[token] = answer
            self._cond.notify_all()
        return answer

    def release(self, tokens: Sequence[T]) -> None:
        with self._cond:
            if tokens:
                self._queued_now()
                self._releases.extend(tokens)
            self._cond.notify_all()

    def _queued_now(self) -> None:
        """Start the linger's clock if nothing was queued (called holding the condition)."""
        if not (self._acks or self._releases):
            self._since = time.monotonic()

    def wait(self, answer: Answer, background: Background) -> bool:
        """Wait for ``answer`` (its batch goes at once), at most ``wait_s``: whether the broker took the
        ack. ``False`` too when the settler thread died or the wait ran out (the ack may still go)."""
        with self._cond:
            self._waiters += 1
            self._cond.notify_all()
        try:
            return background.wait(answer.done, self.wait_s) and answer.taken
        finally:
            with self._cond:
                self._waiters -= 1

    # -- what the consumer asks -----------------------------------------------------------------------

    def queued(self) -> bool:
        """Whether anything waits to be sent (called holding the condition)."""
        return bool(self._acks or self._releases)

    def acking(self) -> list[Delivery]:
        """The deliveries whose acks the broker has not answered: renewed meanwhile."""
        with self._cond:
            return [answer.delivery for answer in self._acking.values()]

    def due(self, drained: bool) -> bool:
        """Whether a batch should go now (called holding the condition)."""
        if not self.queued():
            return False
        full = len(self._acks) >= self.batch or len(self._releases) >= self.batch
        lingered = time.monotonic() - self._since >= self.linger_s
        return full or lingered or drained or self._waiters > 0

    def _linger_left(self) -> float:
        return max(0.0, self.linger_s - (time.monotonic() - self._since))

    # -- sending ------------------------------------------------------------------------------------

    def take(self, limit: int | None = None) -> tuple[list[T], list[T]]:
        """Up to ``limit`` queued acks and as many releases, off the queue."""
        with self._cond:
            acks, releases = self._acks[:limit], self._releases[:limit]
            del self._acks[: len(acks)], self._releases[: len(releases)]
            if self.queued():
                self._since = time.monotonic()
        return acks, releases

    def put_back(self, acks: Sequence[T], releases: Sequence[T]) -> None:
        """Settles that did not go through, back in front of the queue."""
        with self._cond:
            self._acks[:0] = acks
            self._releases[:0] = releases
            self._cond.notify_all()

    def answered(self, acks: Sequence[T], refused: Collection[T] = ()) -> None:
        """The broker answered ``acks`` (taking all but ``refused``): no longer renewed, waiters told."""
        with self._cond:
            answers = [(token, self._acking.pop(token, None)) for token in acks]
        for token, answer in answers:
            if answer is not None:
                answer.taken = token not in refused
                answer.done.set()

    @contextlib.contextmanager
    def draining(self, limit: int | None = None) -> Iterator[tuple[list[T], list[T]]]:
        """The queued acks and releases for a plugin that sends them in its own I/O turn; put back in front
        if the block fails, so that a later turn sends them."""
        acks, releases = self.take(limit)
        try:
            yield acks, releases
        except BaseException:
            self.put_back(acks, releases)
            raise
        self.answered(acks)

    def send_loop(self, send: Send[T], drained: threading.Event) -> None:
        """The settler thread: send batches as they fall due, again after a failure, until the consumer is
        drained and everything went (or was given up)."""
        while True:
            with self._cond:
                while not self.due(drained.is_set()) and not (drained.is_set() and not self.queued()):
                    self._cond.wait(self._linger_left() if self.queued() else IDLE_WAIT_S)
                if drained.is_set() and not self.queued():
                    self.settled.set()
                    return
            self._send_one(send, drained)

    def _send_one(self, send: Send[T], drained: threading.Event) -> None:
        acks, releases = self.take(self.batch)
        try:
            refused = send(acks, releases)
        except TqadminError as exc:
            delay = self.retrying.failed()
            if drained.is_set() and self.retrying.failures > TRIES_WHEN_DRAINED:
                log.warning(
                    "%s: %s; %d acks not sent (those jobs run again)", self.broker_name, exc, len(acks)
                )
                self.answered(acks, acks)
                return
            self.put_back(acks, releases)
            log.warning("%s: %s; acks are sent again shortly", self.broker_name, exc)
            self.retrying.wait(delay)
            return
        except BaseException:
            self.answered(acks, acks)  # the thread dies: its waiters hear no, the run ends with the fault
            raise
        if refused:
            log.warning(
                "%s: %d acks refused: those deliveries had passed to another consumer, which runs them",
                self.broker_name,
                len(refused),
            )
        self.answered(acks, refused)
        self.retrying.succeeded()
