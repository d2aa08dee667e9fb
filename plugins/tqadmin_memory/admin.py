"""The admin face of the memory broker: figures counted in place, a free peek, one-step transfers."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import ClassVar

from tqadmin.plugin.base import BrokerAdmin, Delivery, TransferSession
from tqadmin.plugin.capabilities import Capabilities, Operation
from tqadmin.plugin.kit.sessions import HeldSession
from tqadmin.plugin.models import ActionReport, Message, PeekResult, QueueListing, QueueStats
from tqadmin_memory import MemoryPlugin
from tqadmin_memory.broker import HELD_BY_SESSION, MemoryBroker, Token, broker_for, token_of
from tqadmin_memory.capabilities import CAPABILITIES


def admin_for(url: str) -> MemoryAdmin:
    """The admin face of ``memory://NAME``, declaring what that broker's capabilities say."""
    broker = broker_for(url)
    return _admin_class(broker.capabilities)(broker, url)


class MemoryAdmin(BrokerAdmin):
    capabilities: ClassVar[Capabilities] = CAPABILITIES

    def __init__(self, broker: MemoryBroker, url: str) -> None:
        self.broker = broker
        self.url = url

    def list_queues(self) -> QueueListing:
        names = self.broker.queue_names()
        known = set(names)  # once per listing: the benchmark's 10,000 queues made it quadratic
        return QueueListing(tuple(self._stats(name, known) for name in names), broker=self.url)

    def peek(self, queue: str, count: int) -> PeekResult:
        self.capabilities.require(Operation.PEEK)
        return PeekResult(queue, tuple(self.broker.peek(queue, count)), self.capabilities.peek_cost)

    def open_transfer(self, queue: str) -> TransferSession:
        self.capabilities.require(Operation.MOVE)
        return MemoryTransfer(self.broker, queue)

    def purge(self, queue: str) -> int:
        self.capabilities.require(Operation.PURGE)
        return self.broker.purge(queue)

    def server_side_move(self, source: str, target: str, limit: int | None) -> ActionReport | None:
        if not self.capabilities.supports(Operation.SERVER_SIDE_MOVE):
            return None
        moved = self.broker.move(source, target, limit)
        return ActionReport(
            action="move",
            source=source,
            target=target,
            matched=moved,
            moved=moved,
            detail="server-side: one step inside the memory broker",
        )

    def queue_exists(self, queue: str) -> bool:
        return self.broker.exists(queue)

    def _stats(self, name: str, names: set[str]) -> QueueStats:
        figures = self.broker.figures(name)
        dlq = MemoryPlugin().dlq_name(name)
        now = self.broker.clock()
        rates = figures.rates
        dead = self.broker.figures(dlq) if dlq in names else None
        return QueueStats(
            name=name,
            messages=figures.messages,
            ready=figures.ready,
            unacked=figures.unacked,
            consumers=figures.consumers,
            publish_rate=None if rates is None else rates.publish,
            deliver_rate=None if rates is None else rates.deliver,
            ack_rate=None if rates is None else rates.ack,
            oldest_age_s=_age(now, figures.oldest_due_at),
            dlq=dlq if dlq in names else None,
            dlq_messages=None if dead is None else dead.messages,
            dlq_oldest_age_s=_age(now, None if dead is None else dead.oldest_due_at),
            kind="memory",
            delayed=figures.delayed,
        )


def _age(now: float, since: float | None) -> float | None:
    """Seconds since ``since``: a ready message's due time (a delayed one is not ready: it ages nothing)."""
    return None if since is None else max(0.0, now - since)


@functools.cache
def _admin_class(capabilities: Capabilities) -> type[MemoryAdmin]:
    """``capabilities`` is a class attribute (the TUI reads it from the class): a broker that withholds
    operations gets an admin class of its own."""
    if capabilities == CAPABILITIES:
        return MemoryAdmin
    return type("MemoryAdmin", (MemoryAdmin,), {"capabilities": capabilities})


class MemoryTransfer(HeldSession[Delivery]):
    """Deliveries held by the session until it acks, releases or closes (a lease that does not run out)."""

    def __init__(self, broker: MemoryBroker, queue: str) -> None:
        super().__init__(broker.figures(queue).ready)
        self._broker = broker
        self._queue = queue

    def take(self, want: int) -> Sequence[Delivery]:
        return self._broker.take(self._queue, want, HELD_BY_SESSION)

    def token(self, delivery: Delivery) -> Delivery:
        return delivery

    def key(self, token: Delivery) -> Token:
        return token_of(token)

    def publish(self, items: Sequence[tuple[str, Message]]) -> None:
        self._broker.publish(items)

    def remove(self, tokens: Sequence[Delivery]) -> None:
        self._broker.ack(tokens)

    def give_back(self, tokens: Sequence[Delivery]) -> None:
        self._broker.release(tokens)
