"""A consumer of the memory broker: what differs about this broker, on the shared leased-consumer base.

Its deliveries are leased (``TransportCapabilities.leased``): one not acked, retried, dead-lettered or
extended within ``lease_s`` goes back to the queue by itself, and its token no longer settles it. The
broker fences every settlement by that token itself, at once, in the caller's thread, and its own clock (a
test's fake one) says whether a lease is still held: the base only counts the prefetch window here. So a
consumer that dies loses nothing: :meth:`MemoryConsumer.crash` acts out that death for tests (the loop
ends, nothing is settled or released, the leases run out).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.leased import LeasedConsumer
from tqadmin_memory.broker import MemoryBroker, Token


class MemoryConsumer(LeasedConsumer[Token]):
    loop_name = "the memory consumer's loop"

    def __init__(self, broker: MemoryBroker, queue: str, dlq: str, prefetch: int, lease_s: float) -> None:
        super().__init__(prefetch, lease_s)
        self.broker = broker
        self.queue = queue
        self.dlq = dlq
        self._crashed = False

    def fetch(self, room: int) -> list[Delivery]:
        taken = self.broker.take(self.queue, room, self.lease_s) if room else []
        self.hold(taken, time.monotonic() + self.lease_s)
        if not room:
            self.pause()
        elif not taken:
            self.broker.wait(self.queue, self._stop.is_set)
        return taken

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        return self.broker.extend(deliveries, lease_s)

    def within(self, delivery: Delivery, deadline: float) -> bool:
        return self.broker.holds(delivery)

    def wake(self) -> None:
        self.broker.wake()

    def opened(self) -> None:
        self.broker.attach(self.queue, +1)

    def closed(self) -> None:
        """A session that ends cleanly gives back what was never settled at once, not when leases end."""
        if not self._crashed:
            self.broker.release(self.holding())
        self.broker.attach(self.queue, -1)

    def crash(self) -> None:
        """Die as a killed process does: stop at once and settle nothing; the leases run out."""
        self._crashed = True
        self.drained()
        self.stop()

    def alive(self, delivery: Delivery) -> bool:
        return self.broker.holds(delivery)

    def ack(self, delivery: Delivery) -> bool:
        self.take(delivery)
        return not self.broker.ack([delivery])

    def release(self, deliveries: Sequence[Delivery]) -> None:
        for delivery in deliveries:
            self.take(delivery)
        self.broker.release(deliveries)

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self._forward(delivery, self.queue, headers, delay_s)

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        return self._forward(delivery, self.dlq, headers, 0.0)

    def _forward(self, delivery: Delivery, queue: str, headers: Mapping[str, Any], delay_s: float) -> bool:
        """The body byte for byte, the headers updated, in place of the original (one step here)."""
        self.take(delivery)
        copy = replace(delivery.message, headers={**delivery.message.headers, **headers})
        return self.broker.forward(delivery, queue, copy, delay_s)
