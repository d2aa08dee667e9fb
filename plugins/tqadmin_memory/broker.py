"""The in-process broker behind ``memory://NAME``: queues of leased messages under one lock.

Every face opened with the same URL in one process shares one :class:`MemoryBroker` (dramatiq's stub broker
does the same for its tests). It keeps what a real broker keeps, so the contract means something on it: a
delivery is a lease with an expiry and a token, and settling it is refused once the lease is over (a slow
holder's lease passes to the next consumer that asks); a delay is a due time, applied exactly on the broker's
clock, which a test may inject. Nothing runs in the background: expiry and due times are compared with the
clock whenever someone looks, so the broker owns no thread.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from tqadmin.errors import ConfigError, QueueNotFound, Unroutable
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.capabilities import Capabilities
from tqadmin.plugin.models import Message
from tqadmin_memory.capabilities import CAPABILITIES

Clock = Callable[[], float]
HELD_BY_SESSION = math.inf  # a transfer session's lease: it lasts until the session settles or closes
WAKE_UP_S = 0.05  # longest sleep of a waiting consumer, so that a test's fake clock is noticed soon


@dataclass(frozen=True, slots=True)
class Token:
    """What a delivery of this broker carries: the entry it took and the lease it took it under."""

    queue: str
    entry: int
    lease: int


@dataclass(slots=True)
class _Entry:
    message: Message
    due_at: float
    deliveries: int = 0
    lease: int = 0  # the token of the current lease; 0 when nobody holds it
    lease_ends: float = 0.0

    def held(self, now: float) -> bool:
        return self.lease != 0 and self.lease_ends > now

    def ready(self, now: float) -> bool:
        return not self.held(now) and self.due_at <= now


@dataclass(frozen=True, slots=True)
class Rates:
    """Messages per second published, delivered and acked. The memory broker measures none of these: a test or
    a seeded screen that wants a listing with rates sets them (:meth:`MemoryBroker.set_rates`) on a broker
    whose capabilities do not declare them unavailable."""

    publish: float
    deliver: float
    ack: float


@dataclass(frozen=True, slots=True)
class Figures:
    """One queue's counts at one moment (``messages`` = ready + delayed + unacked); ``rates`` only where a
    test set them."""

    messages: int
    ready: int
    unacked: int
    delayed: int
    consumers: int
    oldest_due_at: float | None
    rates: Rates | None = None


class MemoryBroker:
    """Queues of one ``memory://NAME``. Thread-safe; consumers wait on its condition, never poll hot.

    ``capabilities`` are the admin operations its admin face declares: all of them unless a test wants a
    broker that withholds some (to see tqadmin refuse them with the declared reason).
    """

    def __init__(self, clock: Clock = time.time, capabilities: Capabilities = CAPABILITIES) -> None:
        self.clock = clock
        self.capabilities = capabilities
        self._changed = threading.Condition()
        self._queues: dict[str, dict[int, _Entry]] = {}  # entries in publish order: oldest first
        self._consumers: dict[str, int] = {}
        self._rates: dict[str, Rates] = {}
        self._numbers = itertools.count(1)

    # -- queues -----------------------------------------------------------------------------------------

    def declare(self, queue: str) -> None:
        with self._changed:
            self._queues.setdefault(queue, {})

    def exists(self, queue: str) -> bool:
        with self._changed:
            return queue in self._queues

    def queue_names(self) -> list[str]:
        with self._changed:
            return sorted(self._queues)

    def figures(self, queue: str) -> Figures:
        with self._changed:
            now = self.clock()
            entries = self._entries(queue).values()
            ready = [e for e in entries if e.ready(now)]
            unacked = sum(1 for e in entries if e.held(now))
            return Figures(
                messages=len(entries),
                ready=len(ready),
                unacked=unacked,
                delayed=len(entries) - len(ready) - unacked,
                consumers=self._consumers.get(queue, 0),
                oldest_due_at=min((e.due_at for e in ready), default=None),
                rates=self._rates.get(queue),
            )

    def set_rates(self, queue: str, rates: Rates) -> None:
        """Report ``rates`` in the figures of ``queue`` from now on: a seeding hook, see :class:`Rates`."""
        with self._changed:
            self._entries(queue)
            self._rates[queue] = rates

    # -- messages ---------------------------------------------------------------------------------------

    def publish(self, items: Sequence[tuple[str, Message]], delay_s: float = 0.0) -> None:
        """Store every ``(queue, message)``, due after ``delay_s``: all of them, or none when a queue is
        missing (a publish to a queue nobody declared is returned, as RabbitMQ returns a mandatory one)."""
        with self._changed:
            missing = sorted({queue for queue, _ in items if queue not in self._queues})
            if missing:
                raise Unroutable(f"the memory broker has no queue named {', '.join(missing[:3])}")
            due_at = self.clock() + max(delay_s, 0.0)
            for queue, message in items:
                self._queues[queue][next(self._numbers)] = _Entry(_stored(message), due_at)
            self._changed.notify_all()

    def take(self, queue: str, limit: int, lease_s: float) -> list[Delivery]:
        """Lease up to ``limit`` ready messages, oldest first, for ``lease_s`` seconds."""
        with self._changed:
            now = self.clock()
            taken: list[Delivery] = []
            for number, entry in self._entries(queue).items():
                if len(taken) >= limit:
                    break
                if entry.ready(now):
                    entry.lease, entry.lease_ends = next(self._numbers), now + lease_s
                    entry.deliveries += 1
                    seen = _seen(entry, redelivered=entry.deliveries > 1)
                    taken.append(Delivery(seen, Token(queue, number, entry.lease)))
            return taken

    def peek(self, queue: str, count: int) -> list[Message]:
        """Up to ``count`` ready messages, oldest first, as they are: a read with no side effect."""
        with self._changed:
            now = self.clock()
            ready = (_seen(e, e.deliveries > 0) for e in self._entries(queue).values() if e.ready(now))
            return list(itertools.islice(ready, count))

    def holds(self, delivery: Delivery) -> bool:
        with self._changed:
            return self._held_entry(delivery) is not None

    def ack(self, deliveries: Sequence[Delivery]) -> list[Delivery]:
        """Remove the deliveries still held under their lease; returns those that were not."""
        with self._changed:
            lost = []
            for delivery in deliveries:
                if self._held_entry(delivery) is None:
                    lost.append(delivery)
                else:
                    self._remove(delivery)
            self._changed.notify_all()  # a consumer at its prefetch limit may take more now
            return lost

    def release(self, deliveries: Sequence[Delivery]) -> None:
        """Give held deliveries back, in their original place; others were given back already."""
        with self._changed:
            for delivery in deliveries:
                entry = self._held_entry(delivery)
                if entry is not None:
                    entry.lease = 0
            self._changed.notify_all()

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Renew the leases still held for ``lease_s`` from now; returns the deliveries no longer held."""
        with self._changed:
            now = self.clock()
            lost = []
            for delivery in deliveries:
                entry = self._held_entry(delivery)
                if entry is None:
                    lost.append(delivery)
                else:
                    entry.lease_ends = now + lease_s
            return lost

    def forward(self, delivery: Delivery, queue: str, message: Message, delay_s: float) -> bool:
        """Publish ``message`` to ``queue`` after ``delay_s`` and remove the delivery, in one step, if the
        delivery is still held (a retry, a dead letter); ``False`` and nothing done otherwise."""
        with self._changed:
            if self._held_entry(delivery) is None:
                return False
            self.publish([(queue, message)], delay_s)
            self._remove(delivery)
            return True

    def purge(self, queue: str) -> int:
        """Drop every message nobody holds (ready or delayed), as a broker-side purge does."""
        with self._changed:
            now = self.clock()
            entries = self._entries(queue)
            dropped = [number for number, entry in entries.items() if not entry.held(now)]
            for number in dropped:
                del entries[number]
            return len(dropped)

    def move(self, source: str, target: str, limit: int | None) -> int:
        """Move up to ``limit`` ready messages from ``source`` to the end of ``target``, unchanged, in one
        step; returns how many moved."""
        with self._changed:
            now = self.clock()
            entries, into = self._entries(source), self._entries(target)
            ready = [number for number, entry in entries.items() if entry.ready(now)]
            chosen = ready if limit is None else ready[:limit]
            for number in chosen:
                into[next(self._numbers)] = entries.pop(number)
            self._changed.notify_all()
            return len(chosen)

    # -- consumers --------------------------------------------------------------------------------------

    def attach(self, queue: str, change: int) -> None:
        """Count a consumer of ``queue`` in (+1) or out (-1), for the ``consumers`` figure."""
        with self._changed:
            self._consumers[queue] = self._consumers.get(queue, 0) + change

    def wait(self, queue: str, stopping: Callable[[], bool]) -> None:
        """Sleep until something changes, the next message of ``queue`` falls due or a lease ends."""
        with self._changed:
            if stopping():
                return
            now = self.clock()
            upcoming = (e.lease_ends if e.lease else e.due_at for e in self._entries(queue).values())
            soonest = min((t for t in upcoming if t > now), default=math.inf)
            self._changed.wait(min(WAKE_UP_S, soonest - now))

    def wake(self) -> None:
        """Wake every waiting consumer (one is stopping, or a test moved its clock on)."""
        with self._changed:
            self._changed.notify_all()

    # -- under the lock ---------------------------------------------------------------------------------

    def _entries(self, queue: str) -> dict[int, _Entry]:
        try:
            return self._queues[queue]
        except KeyError:
            raise QueueNotFound(f"the memory broker has no queue named {queue!r}") from None

    def _held_entry(self, delivery: Delivery) -> _Entry | None:
        token = token_of(delivery)
        entry = self._queues.get(token.queue, {}).get(token.entry)
        if entry is None or entry.lease != token.lease or not entry.held(self.clock()):
            return None
        return entry

    def _remove(self, delivery: Delivery) -> None:
        token = token_of(delivery)
        del self._queues[token.queue][token.entry]


def token_of(delivery: Delivery) -> Token:
    token = delivery.token
    assert isinstance(token, Token), "a delivery of another broker"
    return token


def _stored(message: Message) -> Message:
    """What the broker keeps of a published message: not how it was last delivered."""
    return replace(message, redelivered=False, enqueued_at=None, delivery_count=None)


def _seen(entry: _Entry, redelivered: bool) -> Message:
    """The message as a consumer or a look sees it: when it fell due, how often it was handed out."""
    return replace(
        entry.message,
        redelivered=redelivered,
        enqueued_at=entry.due_at,
        delivery_count=entry.deliveries,
    )


_BROKERS: dict[str, MemoryBroker] = {}
_BROKERS_LOCK = threading.Lock()


def broker_for(url: str) -> MemoryBroker:
    """The broker ``memory://NAME`` names in this process, made on first use."""
    name = name_of(url)
    with _BROKERS_LOCK:
        return _BROKERS.setdefault(name, MemoryBroker())


def name_of(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "memory" or not parts.netloc or parts.path.strip("/") or parts.query:
        raise ConfigError(f"a memory broker URL is memory://NAME, not {url!r}")
    return parts.netloc


@contextlib.contextmanager
def shared(url: str, broker: MemoryBroker) -> Iterator[MemoryBroker]:
    """Serve ``broker`` (with a test's clock, or withholding operations) as ``url`` inside the block, and
    forget it after, messages and all."""
    name = name_of(url)
    with _BROKERS_LOCK:
        if name in _BROKERS:
            raise ConfigError(f"memory://{name} is in use already")
        _BROKERS[name] = broker
    try:
        yield broker
    finally:
        with _BROKERS_LOCK:
            _BROKERS.pop(name, None)
