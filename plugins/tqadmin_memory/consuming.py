"""A consumer of the memory broker: leases up to ``prefetch`` messages and settles them by their token.

Its deliveries are leased (``TransportCapabilities.leased``): one not acked, retried, dead-lettered or
extended within ``lease_s`` goes back to the queue by itself, and its token no longer settles it. So a
consumer that dies loses nothing: :meth:`MemoryConsumer.crash` acts out that death for tests (the loop ends,
nothing is settled or released, the leases run out).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from tqadmin.plugin.base import Delivery
from tqadmin.plugin.transport import Consumer
from tqadmin_memory.broker import MemoryBroker, Token, token_of


class MemoryConsumer(Consumer):
    def __init__(self, broker: MemoryBroker, queue: str, dlq: str, prefetch: int, lease_s: float) -> None:
        self.broker = broker
        self.queue = queue
        self.dlq = dlq
        self.prefetch = max(1, prefetch)
        self.lease_s = lease_s
        self._lock = threading.Lock()
        self._unsettled: dict[Token, Delivery] = {}  # what counts against the prefetch, lease over or not
        self._stop = threading.Event()
        self._finish = threading.Event()  # drained, or crashed
        self._crashed = threading.Event()

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        """Hand out deliveries until stopped; once drained, give back what was never settled (a session
        that ends cleanly returns its prefetch at once rather than when the leases run out)."""
        self.broker.attach(self.queue, +1)
        try:
            while not self._stop.is_set():
                with self._lock:
                    room = self.prefetch - len(self._unsettled)
                taken = self.broker.take(self.queue, room, self.lease_s) if room > 0 else []
                with self._lock:
                    self._unsettled.update((token_of(d), d) for d in taken)
                for delivery in taken:
                    on_message(delivery)
                if not taken:
                    self.broker.wait(self.queue, self._stop.is_set)
            self._finish.wait()
            if not self._crashed.is_set():
                with self._lock:
                    left = list(self._unsettled.values())
                self.release(left)
        finally:
            self.broker.attach(self.queue, -1)

    def crash(self) -> None:
        """Die as a killed process does: stop at once and settle nothing; the leases run out."""
        self._crashed.set()
        self._finish.set()
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self.broker.wake()

    def drained(self) -> None:
        self._finish.set()

    def alive(self, delivery: Delivery) -> bool:
        return self.broker.holds(delivery)

    def ack(self, delivery: Delivery) -> bool:
        self._forget([delivery])
        return not self.broker.ack([delivery])

    def release(self, deliveries: Sequence[Delivery]) -> None:
        self._forget(deliveries)
        self.broker.release(deliveries)

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        lost = self.broker.extend(deliveries, lease_s)
        self._forget(lost)
        return lost

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self._forward(delivery, self.queue, headers, delay_s)

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        return self._forward(delivery, self.dlq, headers, 0.0)

    def _forward(self, delivery: Delivery, queue: str, headers: Mapping[str, Any], delay_s: float) -> bool:
        """The body byte for byte, the headers updated, in place of the original (one step here)."""
        self._forget([delivery])
        copy = replace(delivery.message, headers={**delivery.message.headers, **headers})
        return self.broker.forward(delivery, queue, copy, delay_s)

    def _forget(self, deliveries: Sequence[Delivery]) -> None:
        with self._lock:
            for delivery in deliveries:
                self._unsettled.pop(token_of(delivery), None)
