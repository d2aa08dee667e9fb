"""Every delivery a worker holds, so that leased ones can be extended before the broker takes them back.

On brokers whose deliveries are leased (SQS visibility, Redis pending-entry idle time, the SQLite lease), a
job longer than the lease would run twice unless its holder renews it, and so would a message that waits in
the prefetch window behind a slow job. :class:`HoldingConsumer` wraps the plugin's consumer: it notes each
delivery handed to the worker and forgets it once settled, and :meth:`HoldingConsumer.extend_held` renews
all of them in one call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.plugin.base import Delivery
from tqadmin.plugin.transport import Consumer


class HoldingConsumer(Consumer):
    """A consumer that knows which of its deliveries are unsettled (started or still prefetched)."""

    def __init__(self, inner: Consumer) -> None:
        self.inner = inner
        self._lock = threading.Lock()
        self._held: dict[int, Delivery] = {}

    def held(self) -> list[Delivery]:
        with self._lock:
            return list(self._held.values())

    def extend_held(self, lease_s: float) -> list[Delivery]:
        """Extend every delivery held now (asked even when none is: the plugin also renews what it has yet
        to ack); returns those the broker already gave to someone else."""
        lost = self.inner.extend(self.held(), lease_s)
        self._forget(lost)
        return lost

    def _note(self, delivery: Delivery) -> None:
        with self._lock:
            self._held[id(delivery)] = delivery

    def _forget(self, deliveries: Sequence[Delivery]) -> None:
        with self._lock:
            for delivery in deliveries:
                self._held.pop(id(delivery), None)

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        def noted(delivery: Delivery) -> None:
            self._note(delivery)
            on_message(delivery)

        self.inner.run(noted)

    def watch_lost(self, listener: Callable[[], None]) -> None:
        self.inner.watch_lost(listener)

    def watch_turns(self, listener: Callable[[], None]) -> None:
        self.inner.watch_turns(listener)

    def stop(self) -> None:
        self.inner.stop()

    def drained(self) -> None:
        self.inner.drained()

    def alive(self, delivery: Delivery) -> bool:
        return self.inner.alive(delivery)

    def ack(self, delivery: Delivery) -> bool:
        self._forget([delivery])
        return self.inner.ack(delivery)

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self._forget(deliveries)
        self.inner.release(deliveries)

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        return self.inner.extend(deliveries, lease_s)

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        try:
            return self.inner.retry_later(delivery, delay_s, headers)
        finally:
            self._forget([delivery])

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        try:
            return self.inner.dead_letter(delivery, headers)
        finally:
            self._forget([delivery])
