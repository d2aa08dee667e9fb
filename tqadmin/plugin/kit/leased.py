"""The consumer of a broker that leases its deliveries, written once: a plugin says how its broker fetches,
settles and renews, and this base keeps the books.

A leased broker (SQS visibility, a Redis pending entry, a SQLite row's lease, the memory broker) gives a
delivery back by itself unless its holder renews it; so every such consumer needs the same bookkeeping, and
copies of it drifted (a backoff uncapped again, a dead thread that stalled one worker and stopped another
loudly). :class:`LeasedConsumer` keeps it in one place:

- the deliveries held, each with its deadline (``time.monotonic()``, less the plugin's safety margin) and
  its token (the broker's fencing handle: a receipt, an entry id, a lease token), counted against the
  prefetch until :meth:`~LeasedConsumer.take` takes it back to settle it;
- renewal through :meth:`~LeasedConsumer.extend`, in the plugin's batch size, and the deliveries found lost
  (remembered, so a later renewal says so again rather than pretending they were settled);
- queued acks and releases (:class:`~tqadmin.plugin.kit.settling.Settles`), sent by a settler thread of the
  base in the plugin's batch size, after its linger, again with backoff after a failure, or drained by the
  plugin's own I/O turn (:meth:`~LeasedConsumer.queued`); an ack whose caller must know waits for the
  broker's answer (:meth:`~LeasedConsumer.ack_answered`);
- the I/O loop: :meth:`~LeasedConsumer.fetch` each turn, the plugin's transient errors waited out with
  :class:`~tqadmin.plugin.kit.retrying.Retrying` (the capped :mod:`tqadmin.connect.backoff`), its fatal ones
  ending the run, and the end of a run once stopped, drained and flushed;
- one policy for a thread that fails (:class:`~tqadmin.plugin.kit.background.Background`): the run ends with a
  :class:`~tqadmin.plugin.kit.background.PluginFault`, the worker exits 1 with the masked traceback, never a
  silent stall.

The contract the worker sees is :class:`~tqadmin.plugin.transport.Consumer`'s, unchanged.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import abstractmethod
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from typing import ClassVar, Generic, TypeVar, cast

from tqadmin.errors import NotAuthorized, TqadminError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.background import Background
from tqadmin.plugin.kit.retrying import Retrying
from tqadmin.plugin.kit.settling import Settles
from tqadmin.plugin.transport import Consumer

log = logging.getLogger("tqadmin.worker")

LOST_KEPT = 10_000  # lost tokens remembered (the latest), so a renewal reports them again
PAUSE_S = 0.25  # the longest an idle turn waits before looking again (a settle, stop or drain wakes it)

T = TypeVar("T")
"""The broker's token of a delivery (a receipt, an entry id, a lease): the base is generic in it, as
:class:`~tqadmin.plugin.kit.sessions.HeldSession` is."""


class _Lease:
    """A delivery handed out and when its lease ends (``time.monotonic()``)."""

    __slots__ = ("deadline", "delivery")

    def __init__(self, delivery: Delivery, deadline: float) -> None:
        self.delivery = delivery
        self.deadline = deadline


class LeasedConsumer(Consumer, Generic[T]):
    """The bookkeeping of a consumer on a leased broker. A plugin implements :meth:`fetch` and
    :meth:`renew` (and :meth:`settle` when it names a :attr:`settler`), ``retry_later`` and ``dead_letter``,
    and the hooks where its broker differs; everything else is here."""

    broker_name: ClassVar[str] = "the broker"
    """How the log names the broker (``"Redis"``)."""
    loop_name: ClassVar[str] = "the consumer's loop"
    """How a fault of the I/O loop names it."""
    settler: ClassVar[str | None] = None
    """The name of the thread that sends queued acks and releases through :meth:`settle`; ``None`` when the
    plugin drains them itself (in :meth:`fetch`, through :meth:`queued`) or settles at once."""
    settle_batch: ClassVar[int] = 1000
    """The most acks (and as many releases) one :meth:`settle` sends."""
    settle_linger_s: ClassVar[float] = 0.0
    """How long a queued settle may wait for others to fill its batch before the settler sends it."""
    settle_wait_s: ClassVar[float] = 120.0
    """The longest :meth:`ack_answered` waits for the broker's answer (its client's retries, and more)."""
    extend_batch: ClassVar[int] = 1000
    transient: ClassVar[tuple[type[Exception], ...]] = (TqadminError,)
    """Errors of :meth:`fetch` that are waited out with backoff; any other ends the run."""
    fatal: ClassVar[tuple[type[Exception], ...]] = (NotAuthorized,)
    """Errors that end the run even though they are transient-looking (refused credentials)."""
    lease_ends_with_deadline: ClassVar[bool] = True
    """Whether a delivery past its deadline is surely gone (a visibility timeout, a row's lease). ``False``
    where it stays ours until another consumer claims it (a Redis pending entry): then the broker is asked."""

    def __init__(self, prefetch: int, lease_s: float, *, safety_s: float = 0.0) -> None:
        self.prefetch = max(1, prefetch)
        self.lease_s = lease_s
        self.safety_s = safety_s
        self._cond = threading.Condition()
        self._held: dict[T, _Lease] = {}  # token -> what is handed out and not settled or lost
        self._lost: dict[T, None] = {}  # tokens found passed to another consumer (the latest LOST_KEPT)
        self.settles: Settles[T] = Settles(
            self._cond,
            batch=self.settle_batch,
            linger_s=self.settle_linger_s,
            wait_s=self.settle_wait_s,
            broker_name=self.broker_name,
        )
        self._stop = threading.Event()
        self._drained = threading.Event()
        self.background = Background(self.stop)
        self.retrying = Retrying(sleep=self._pause_for)  # the I/O loop's; a stop cuts it short

    # -- what a plugin writes --------------------------------------------------------------------------

    @abstractmethod
    def fetch(self, room: int) -> list[Delivery]:
        """One turn of the I/O thread: take up to ``room`` deliveries (0 while full or stopping), record
        them with :meth:`hold` and return those to hand out; wait a little (:meth:`pause`) when there is
        nothing to do. Raise a :attr:`transient` error to have the turn tried again after a backoff."""

    @abstractmethod
    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Extend the leases of up to :attr:`extend_batch` deliveries held; returns those the broker refused
        (passed to another consumer). Raise a ``TqadminError`` when the broker cannot say."""

    def settle(self, acks: Sequence[T], releases: Sequence[T]) -> Collection[T]:
        """Send one batch of queued acks and releases (tokens, at most :attr:`settle_batch` of each), from
        the :attr:`settler` thread; returns the acks the broker refused (passed to another consumer). Raise
        a ``TqadminError`` to have them sent again after a backoff."""
        raise NotImplementedError(f"{type(self).__name__} names a settler thread but sends nothing")

    def within(self, delivery: Delivery, deadline: float) -> bool:
        """Whether ``delivery``'s lease is still this consumer's by the plugin's clocks."""
        return time.monotonic() < deadline - self.safety_s

    def wake(self) -> None:
        """Wake an I/O turn that waits inside the broker's client (a stop, a drain)."""

    def opened(self) -> None:
        """Called in the I/O thread before the first turn (start threads, join a group)."""

    def closed(self) -> None:
        """Called in the I/O thread once the run ends, however it ends (leave the group, sign off)."""

    def failed(self, delay_s: float) -> None:
        """A turn failed with a transient error and waits ``delay_s`` (forget a registration, say)."""

    # -- the I/O thread -------------------------------------------------------------------------------

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        if self.settler is not None:
            self.background.start(self.settler, lambda: self.settles.send_loop(self.settle, self._drained))
        try:
            with self.background.io_loop(self.loop_name):
                self.opened()
                while not self._finished():
                    self.report_turn()
                    self.background.check()
                    for delivery in self._one_turn():
                        on_message(delivery)
        finally:
            self.closed()

    def _one_turn(self) -> list[Delivery]:
        room = 0 if self._stop.is_set() else self.room()
        try:
            deliveries = self.fetch(room)
        except self.fatal:
            self._stop.set()
            raise
        except self.transient as exc:
            delay = self.retrying.failed()
            log.warning("%s: %s; trying again in %.1f s", self.broker_name, exc, delay)
            self.failed(delay)
            self.retrying.wait(delay)
            return []
        self.retrying.succeeded()
        return deliveries

    def _finished(self) -> bool:
        if not (self._stop.is_set() and self._drained.is_set()):
            return False
        if self.settler is not None:
            return self.settles.settled.is_set()
        with self._cond:
            return not self.settles.queued()

    def _pause_for(self, seconds: float) -> None:
        """A backoff's wait: cut short by a stop; waited in full once stopping (the drain goes on)."""
        if self._stop.is_set():
            time.sleep(seconds)
        else:
            self._stop.wait(seconds)

    def pause(self, timeout_s: float = PAUSE_S) -> None:
        """Wait until a settle, a stop or a drain may have given the I/O turn something to do."""
        with self._cond:
            queued = self.settler is None and self.settles.queued()
            if not (queued or (self._stop.is_set() and self._drained.is_set())):
                self._cond.wait(timeout_s)

    def room(self) -> int:
        """How many more deliveries the prefetch window takes."""
        with self._cond:
            return self.prefetch - len(self._held)

    def hold(self, deliveries: Sequence[Delivery], deadline: float) -> None:
        """Count ``deliveries`` as held until ``deadline`` (``time.monotonic()``)."""
        with self._cond:
            self._held.update((self.token(d), _Lease(d, deadline)) for d in deliveries)

    def holding(self) -> list[Delivery]:
        """The deliveries held now (what a clean end gives back)."""
        with self._cond:
            return [lease.delivery for lease in self._held.values()]

    def queued(self, limit: int | None = None) -> AbstractContextManager[tuple[list[T], list[T]]]:
        """The queued acks and releases (tokens), taken off the queue, for a plugin that sends them in its
        own I/O turn; put back in front if the block fails, so that they are sent on a later turn."""
        return self.settles.draining(limit)

    # -- any thread -----------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        self.wake()

    def drained(self) -> None:
        self._drained.set()
        with self._cond:
            self._cond.notify_all()
        self.wake()

    def token(self, delivery: Delivery) -> T:
        """``delivery``'s token, as the plugin's :meth:`hold` recorded it."""
        return cast(T, delivery.token)

    def take(self, delivery: Delivery) -> T | None:
        """The delivery's token if it is still this consumer's to settle, no longer counted as held (its
        settlement follows); ``None`` when it was settled already or its lease ended. The I/O turn is
        woken: the window has room again."""
        token = self._unhold(delivery)
        with self._cond:
            self._cond.notify_all()
        return token

    def _unhold(self, delivery: Delivery) -> T | None:
        """:meth:`take` without waking the I/O turn, for a settle that queues the token and wakes it once
        (two wake-ups an ack cost a write transaction each: one to claim into the slot, one for the ack)."""
        with self._cond:
            lease = self._held.pop(self.token(delivery), None)
        if lease is None:
            return None
        if self.lease_ends_with_deadline and not self.within(delivery, lease.deadline):
            return None
        return self.token(delivery)

    def alive(self, delivery: Delivery) -> bool:
        """Held and within its lease: ours. Past its deadline: gone where leases end by themselves (its
        slot freed); elsewhere the broker is asked, renewing it if it is still ours."""
        with self._cond:
            lease = self._held.get(self.token(delivery))
        if lease is None:
            return False
        if self.within(delivery, lease.deadline):
            return True
        if self.lease_ends_with_deadline:
            self._lose([delivery])
            return False
        return not self.extend([delivery], self.lease_s)

    def ack(self, delivery: Delivery) -> bool:
        """Queue the ack (sent in the next batch): whether the delivery was still ours to ack."""
        token = self._unhold(delivery)
        if token is None:
            with self._cond:
                self._cond.notify_all()  # at least the slot freed
            return False
        self.settles.ack(token, delivery)
        self.wake()
        return True

    def ack_answered(self, delivery: Delivery) -> bool:
        """Ack and wait for the broker's answer (its batch goes at once), at most :attr:`settle_wait_s`:
        whether it took the ack. For an original whose copy was stored: ``False`` says it may come back."""
        token = self._unhold(delivery)
        if token is None:
            with self._cond:
                self._cond.notify_all()
            return False
        answer = self.settles.ack(token, delivery)
        self.wake()
        return self.settles.wait(answer, self.background)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        tokens = [t for t in map(self._unhold, deliveries) if t is not None]
        self.settles.release(tokens)  # wakes the settler, or at least says the slots are free
        if tokens:
            self.wake()

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Renew what is still held, in batches; returns what this consumer no longer holds (lost now or
        before; not what was settled meanwhile). A renewal the broker cannot answer loses nothing yet:
        the next one tries again before the deadline.

        Deliveries whose acks wait to be sent are renewed too, whatever the caller passed: a job done while
        the broker was away keeps its entry until the ack lands, rather than leave it to idle past its lease
        and run again elsewhere. What the broker says of those is not reported: the ack will tell."""
        with self._cond:
            leases = [(d, self._held.get(self.token(d))) for d in deliveries]
            lost = [d for d, lease in leases if lease is None and self.token(d) in self._lost]
        acking = self.settles.acking()
        live: list[Delivery] = []
        for delivery, lease in leases:
            if lease is not None:
                final = self.lease_ends_with_deadline and not self.within(delivery, lease.deadline)
                (lost if final else live).append(delivery)
        live += acking
        for start in range(0, len(live), self.extend_batch):
            batch = live[start : start + self.extend_batch]
            asked = time.monotonic()
            try:
                refused = {id(d) for d in self.renew(batch, lease_s)}
            except TqadminError as exc:
                log.warning("could not renew the lease of %d deliveries: %s", len(batch), exc)
                continue
            with self._cond:
                for delivery in batch:
                    lease = self._held.get(self.token(delivery))
                    if lease is None:
                        continue  # settled while the renewal ran: not lost
                    if id(delivery) in refused:
                        lost.append(delivery)
                    else:
                        lease.deadline = max(lease.deadline, asked + lease_s)
        self._lose(lost)
        return lost

    def _lose(self, deliveries: Sequence[Delivery]) -> None:
        """No longer ours: their slots freed, their tokens remembered as lost."""
        with self._cond:
            for delivery in deliveries:
                if self._held.pop(self.token(delivery), None) is not None:
                    self._lost[self.token(delivery)] = None
            while len(self._lost) > LOST_KEPT:
                del self._lost[next(iter(self._lost))]
            self._cond.notify_all()
