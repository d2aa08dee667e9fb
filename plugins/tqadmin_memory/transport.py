"""The transport face of the memory broker: publish to a declared queue, consume under a lease."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from tqadmin.errors import Unroutable
from tqadmin.plugin.capabilities import TransportCapabilities
from tqadmin.plugin.transport import (
    BrokerTransport,
    Consumer,
    Outcome,
    Outgoing,
    PublishResult,
    publish_options,
)
from tqadmin_memory import MemoryPlugin
from tqadmin_memory.broker import broker_for
from tqadmin_memory.capabilities import TRANSPORT_CAPABILITIES
from tqadmin_memory.consuming import MemoryConsumer


class MemoryTransport(BrokerTransport):
    capabilities: ClassVar[TransportCapabilities] = TRANSPORT_CAPABILITIES

    def __init__(self, url: str) -> None:
        self.broker = broker_for(url)

    def declare(self, queue: str) -> None:
        self.broker.declare(queue)
        self.broker.declare(MemoryPlugin().dlq_name(queue))

    def publish_now(
        self, messages: Sequence[Outgoing], *, window: int, options: Mapping[str, str] | None
    ) -> PublishResult:
        """One message at a time, each confirmed as it is stored (``window`` has nothing to bound)."""
        publish_options(options, TRANSPORT_CAPABILITIES, "the memory broker")
        outcomes: list[Outcome] = []
        error: Unroutable | None = None
        for item in messages:
            try:
                self.broker.publish([item])
            except Unroutable as exc:
                outcomes.append(Outcome.FAILED)
                error = error or exc
            else:
                outcomes.append(Outcome.CONFIRMED)
        return PublishResult(tuple(outcomes), error)

    def consumer(self, queue: str, *, prefetch: int, lease_s: float) -> Consumer:
        self.declare(queue)
        return MemoryConsumer(self.broker, queue, MemoryPlugin().dlq_name(queue), prefetch, lease_s)

    def close(self) -> None:
        """Nothing is held between calls: the broker lives on for the other faces of its URL."""
