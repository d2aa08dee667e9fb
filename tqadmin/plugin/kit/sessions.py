"""The bookkeeping of a transfer session, written once: a plugin writes what differs about its broker.

Every broker's :class:`~tqadmin.plugin.base.TransferSession` repeated the same three things, and copies
drift. Here they are once:

- **the count at start is a cap** (:class:`CappedSession`): a session never fetches more than the queue held
  when it opened, so a producer feeding the queue while a move drains it is not chased forever;
- **the held set** (:class:`HeldSession`): what was fetched and not yet acked or released, settled at most
  once (a delivery acked twice, or one of another session, is ignored), and given back when the session
  closes, whatever ended the run, so nothing stays taken by a session that is gone;
- **lease renewal**: on a broker whose holds run out (a Redis pending entry, an SQS visibility timeout, an
  SQLite lease), everything held is renewed once a third of the lease has passed, checked whenever the session
  is used (fetch, publish, ack), so a long filtered scan keeps what it holds back for minutes.

A plugin's session derives from :class:`HeldSession` (or, for a session that only reads,
:class:`CappedSession`) and writes the broker's part as hooks: :meth:`~CappedSession.take`,
:meth:`~HeldSession.token`, :meth:`~HeldSession.key`, :meth:`~HeldSession.publish`,
:meth:`~HeldSession.remove`, :meth:`~HeldSession.give_back`, and where it applies
:meth:`~HeldSession.renew`, :meth:`~HeldSession.give_back_all` and :meth:`~HeldSession.disconnect`.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Hashable, Sequence
from typing import Generic, TypeVar

from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import Message

T = TypeVar("T")
"""What a session keeps for each delivery it holds: the plugin's token (a receipt, an entry id, a lease)."""


class CappedSession(TransferSession):
    """The count at start and the cap it sets on fetching; a plugin writes :meth:`take`.

    ``bounded=False`` lifts the cap for a session that is no transfer (an SQS peek, whose count is only
    approximate, wants as many as it asks for)."""

    def __init__(self, count: int, *, bounded: bool = True) -> None:
        self._count = count
        self._bounded = bounded
        self._fetched = 0

    def count_at_start(self) -> int:
        return self._count

    @property
    def fetched(self) -> int:
        """How many of the count at start were handed out or passed over so far."""
        return self._fetched

    def fetch(self, limit: int) -> Sequence[Delivery]:
        want = min(limit, self._count - self._fetched) if self._bounded else limit
        if want <= 0:
            return []
        taken = self.take(want)
        self._fetched += len(taken)
        return taken

    def passed_over(self, count: int) -> None:
        """``count`` messages of the count at start will never be handed out (deleted meanwhile, or the
        queue shrank under a read): counted as fetched, so the session does not wait for them."""
        self._fetched += count

    @abstractmethod
    def take(self, want: int) -> Sequence[Delivery]:
        """Up to ``want`` (at least 1) more deliveries from the broker, oldest first; fewer or none when the
        queue has no more for this session. Called only within the cap."""


class HeldSession(CappedSession, Generic[T]):
    """A session that holds what it fetched until it acks, releases or closes, renewing leases that run out.

    ``lease_s`` is how long a hold lasts on the broker without renewal (``None``: the broker holds for the
    session, as a channel or a lock does); ``clock`` says when a third of it has passed (a fake in tests).
    """

    def __init__(
        self,
        count: int,
        *,
        bounded: bool = True,
        lease_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(count, bounded=bounded)
        self.held: dict[Hashable, T] = {}
        """What was fetched and not yet acked or released, in fetch order, by :meth:`key`. A plugin may
        replace a held token with a newer one of the same message (SQS: a newer receipt)."""
        self._lease_s = lease_s
        self._clock = clock
        self._renewed_at = clock()
        self._closed = False

    # -- the contract, written once ------------------------------------------------------------------------

    def fetch(self, limit: int) -> Sequence[Delivery]:
        self.renew_if_due()
        taken = super().fetch(limit)
        for delivery in taken:
            token = self.token(delivery)
            if token is not None:
                self.held[self.key(token)] = token
        return taken

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        if items:
            self.renew_if_due()
            self.publish(items)

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        self.renew_if_due()
        tokens = self._settle(deliveries)
        if tokens:
            self.remove(tokens)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        tokens = self._settle(deliveries)
        if tokens:
            self.give_back(tokens)

    def close(self) -> None:
        """Give back everything still held, once, then :meth:`disconnect` even when the give-back failed."""
        if self._closed:
            return
        self._closed = True
        held = list(self.held.values())
        self.held.clear()
        try:
            self.give_back_all(held)
        finally:
            self.disconnect()

    def renew_if_due(self) -> None:
        """Renew every hold once a third of the lease passed since the last renewal (or the start)."""
        if self._lease_s is None or self._clock() - self._renewed_at < self._lease_s / 3:
            return
        self._renewed_at = self._clock()
        if self.held:
            self.renew(list(self.held.values()))

    def _settle(self, deliveries: Sequence[Delivery]) -> list[T]:
        """The held tokens of ``deliveries``, no longer held: each is settled once, and only by us."""
        settled = []
        for delivery in deliveries:
            token = self.token(delivery)
            held = None if token is None else self.held.pop(self.key(token), None)
            if held is not None:
                settled.append(held)
        return settled

    # -- what differs about the broker -------------------------------------------------------------------

    @abstractmethod
    def token(self, delivery: Delivery) -> T | None:
        """What this session keeps for ``delivery`` (usually its token), ``None`` for one it never gave."""

    @abstractmethod
    def key(self, token: T) -> Hashable:
        """What names the message ``token`` holds (an entry id, a row id, a delivery tag), so that two
        tokens of one message are one hold."""

    @abstractmethod
    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        """Publish a non-empty batch confirmed (:meth:`TransferSession.publish_confirmed`'s contract)."""

    @abstractmethod
    def remove(self, tokens: Sequence[T]) -> None:
        """Remove these held messages from the source for good (the ack)."""

    @abstractmethod
    def give_back(self, tokens: Sequence[T]) -> None:
        """Put these held messages back in their queue, in their place where the broker can."""

    def give_back_all(self, tokens: Sequence[T]) -> None:
        """At close, everything still held (``tokens``, maybe none): :meth:`give_back` by default."""
        if tokens:
            self.give_back(tokens)

    def renew(self, tokens: Sequence[T]) -> None:
        """Hold these for another lease (only called when ``lease_s`` is set)."""

    def disconnect(self) -> None:
        """Let go of the broker after the last give-back (nothing by default)."""
