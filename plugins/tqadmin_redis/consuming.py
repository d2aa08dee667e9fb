"""The worker's side of a Redis stream: take entries in the queue's consumer group while jobs run elsewhere.

The I/O loop (the worker's main thread) takes entries: a script promotes the retries that are due and reads
new entries without blocking; when there are none it blocks in ``XREADGROUP`` no longer than the next due
retry, and at most 100 ms: that bounds how late a retry scheduled meanwhile is promoted. Every few
seconds a recovery pass claims entries whose holder let them sit idle past its lease (a dead or stopped
worker, or entries given back), oldest first.

A delivery is held for as long as the entry is pending to this consumer: the worker's monitor renews what it
holds (:meth:`RedisConsumer.extend`), and an entry idle past this consumer's lease may be claimed by another
one, which then owns it. Every settlement is a fenced script (:mod:`.scripts`): once the entry has passed to
someone else, ours does nothing and returns ``False``.

Acks are queued to a settler thread that sends each batch as one script call, so a busy worker pays one
round trip per batch rather than per job; retries and dead letters block their job thread until done. The
settler runs under :class:`~tqadmin.plugin.background.Background` (its death ends :meth:`RedisConsumer.run`
with the fault, and the end of a run never waits for a dead settler); both loops wait
:class:`~tqadmin.plugin.retrying.Retrying`'s backoff after a failure, however many come in a row.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqadmin.errors import ConnectError, NotAuthorized, TqadminError
from tqadmin.plugin.background import Background
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.retrying import Retrying
from tqadmin.plugin.transport import Consumer
from tqadmin.redis_client import ScriptCall, text
from tqadmin_redis import scripts
from tqadmin_redis.connection import Connection
from tqadmin_redis.entries import headers_json, to_message
from tqadmin_redis.naming import GROUP, RELEASED, QueueKeys

log = logging.getLogger("tqadmin.worker")

# How long an idle consumer blocks in XREADGROUP. A new entry wakes it at once; a retry another thread
# schedules while it blocks does not (a sorted set does not wake stream readers), so this bounds how late a
# due retry is promoted: the declared delay precision.
MAX_BLOCK_MS = 100
PROMOTE_MAX = 1000
RECOVER_SCAN = 1000
ACK_BATCH = 1000
FORGET_EVERY_S = 60.0
LOST_KEPT = 10_000
SETTLE_TRIES_WHEN_DRAINED = 5  # after the drain, acks that keep failing are given up (those jobs run again)
WAIT_SLICE_S = 0.5  # the end of a run looks this often whether the drain or the settler is done


def consumer_name() -> str:
    """Unique per consumer: two consumers never share a name, or one could settle the other's entries."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class RedisConsumer(Consumer):
    def __init__(
        self, connection: Connection, keys: QueueKeys, dlq: QueueKeys, prefetch: int, lease_s: float
    ):
        self.conn = connection
        self.keys = keys
        self.dlq = dlq
        self.prefetch = max(prefetch, 1)
        self.lease_ms = max(int(lease_s * 1000), 1)
        self.name = consumer_name()
        self._recover_every_s = min(max(lease_s / 4, 0.25), 5.0)
        self._lock = threading.Condition()
        # entry ids delivered to the worker and not settled or lost -> when their lease last started
        # (time.monotonic()): past the lease, another consumer may have claimed them
        self._held: dict[str, float] = {}
        self._lost: dict[str, None] = {}  # entries found passed to another consumer (the latest LOST_KEPT)
        self._acks: list[str] = []
        self._gives: list[str] = []  # entries to give back (release)
        self._stop = threading.Event()
        self._drained = threading.Event()
        self._settled = threading.Event()  # the settler has sent everything and ended
        self._cursor = "-"
        self.background = Background(self.stop)
        self.retrying = Retrying(sleep=self._stop.wait)  # the I/O loop's, cut short by a stop
        self.settle_retrying = Retrying()  # the settler's: it goes on sending after a stop

    # -- the I/O thread ------------------------------------------------------------------------------------

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        self.background.start("tq-redis-acks", self._settle_loop)
        with self.background.io_loop("the Redis consumer's loop"):
            self._consume(on_message)
            while not self._drained.wait(WAIT_SLICE_S):
                self.background.check()
            with self._lock:
                self._lock.notify_all()
            while not self._settled.wait(WAIT_SLICE_S):
                self.background.check()
        self._forget_self()

    def _consume(self, on_message: Callable[[Delivery], None]) -> None:
        next_recover = next_forget = 0.0
        registered = False
        while not self._stop.is_set():
            self.background.check()
            try:
                if not registered:
                    self._register()
                    registered = True
                    next_recover = max(next_recover, time.monotonic() + self._restart_grace_s())
                now = time.monotonic()
                if now >= next_recover:
                    next_recover = now + (0 if self._recover(on_message) else self._recover_every_s)
                if now >= next_forget:
                    next_forget = now + FORGET_EVERY_S
                    self._forget_idle_consumers()
                self._take(on_message)
                self.retrying.succeeded()
            except NotAuthorized:
                self._stop.set()
                raise
            except (ConnectError, TqadminError) as exc:
                registered = False  # a Redis that lost its data (no persistence) lost the group too
                delay = self.retrying.failed()
                log.warning("Redis: %s; trying again in %.1f s", exc, delay)
                self.retrying.wait(delay)
                # Idle times ran on while Redis was away (or restarting): let the other live consumers renew
                # what they hold for one lease before claiming anything as abandoned.
                next_recover = time.monotonic() + delay + self.lease_ms / 1000

    def _register(self) -> None:
        """Join the group (made again if Redis lost it) and say this consumer's lease."""
        self.conn.ensure_group(self.keys.stream)
        with self.conn.translated():
            pipe = self.conn.client.pipeline(transaction=False)
            pipe.hset(self.keys.consumers, self.name, self.lease_ms)
            pipe.xgroup_createconsumer(self.keys.stream, GROUP, self.name)
            pipe.execute()

    def _restart_grace_s(self) -> float:
        """How long to wait before claiming anything as abandoned: a Redis up for less than a lease has just
        restarted, and idle times ran on while it was away, so every holder looks past its lease for a moment.
        Until the server has been up for a lease, the live holders (cut off by the same restart, and back
        within a third of a lease) renew first; a consumer that starts then takes none of their entries."""
        import redis

        lease_s = self.lease_ms / 1000
        with self.conn.translated():
            try:
                uptime = min(int(m.info("server")["uptime_in_seconds"]) for m in self.conn.masters())
            except (redis.ResponseError, KeyError, ValueError):  # INFO renamed or refused: assume the worst
                return lease_s
        return max(0.0, lease_s - uptime)

    def _room(self) -> int:
        with self._lock:
            return self.prefetch - len(self._held)

    def _take(self, on_message: Callable[[Delivery], None]) -> None:
        room = self._room()
        if room <= 0:
            with self._lock:
                self._lock.wait(0.2)
            return
        entries, wait_ms = self.conn.run_one(
            (scripts.TAKE, (self.keys.stream, self.keys.delay), (GROUP, self.name, room, PROMOTE_MAX))
        )
        if entries:
            self._hand_out([(e[0], e[1], 1) for e in entries], on_message)
            return
        if wait_ms == 0:
            return  # a retry is due now: the next take promotes it
        block = MAX_BLOCK_MS if wait_ms < 0 else max(1, min(MAX_BLOCK_MS, int(wait_ms)))
        with self.conn.translated():
            read = self.conn.client.xreadgroup(
                GROUP, self.name, {self.keys.stream: ">"}, count=room, block=block
            )
        for _stream, items in read or ():
            self._hand_out([(entry_id, fields, 1) for entry_id, fields in items if fields], on_message)

    def _recover(self, on_message: Callable[[Delivery], None]) -> bool:
        """Claim entries idle past their holder's lease; ``True`` when there may be more right now."""
        room = self._room()
        if room <= 0:
            return False
        claimed, cursor = self.conn.run_one(
            (
                scripts.RECOVER,
                (self.keys.stream, self.keys.consumers),
                (GROUP, self.name, self.lease_ms, RECOVER_SCAN, room, self._cursor),
            )
        )
        self._cursor = text(cursor)
        if claimed:
            log.info("claimed %d entries of %s left idle past their lease", len(claimed), self.keys.name)
            self._hand_out([(c[0], c[1], int(c[2])) for c in claimed], on_message)
        return len(claimed) >= room or self._cursor != "-"

    def _hand_out(
        self, entries: Sequence[tuple[Any, Any, int]], on_message: Callable[[Delivery], None]
    ) -> None:
        deliveries = []
        for entry_id, fields, count in entries:
            ident = text(entry_id)
            deliveries.append(Delivery(to_message(ident, fields, count), ident))
        with self._lock:
            now = time.monotonic()
            self._held.update((d.token, now) for d in deliveries if isinstance(d.token, str))
        for delivery in deliveries:
            on_message(delivery)

    def _forget_idle_consumers(self) -> None:
        """Remove consumers of this queue that hold nothing and have been silent for long (dead workers
        whose entries were claimed back), so the group lists live consumers only."""
        with self.conn.translated():
            consumers = self.conn.client.xinfo_consumers(self.keys.stream, GROUP)
            leases = self.conn.client.hgetall(self.keys.consumers)
        for consumer in consumers:
            name = text(consumer["name"])
            if name in (self.name, RELEASED) or consumer["pending"]:
                continue
            lease_ms = int(leases.get(name.encode(), self.lease_ms))
            if consumer["idle"] > max(2 * lease_ms, FORGET_EVERY_S * 1000):
                self._forget(name)

    def _forget(self, name: str) -> None:
        self.conn.run_one((scripts.FORGET_CONSUMER, (self.keys.stream, self.keys.consumers), (GROUP, name)))

    def _forget_self(self) -> None:
        try:
            self._forget(self.name)
        except TqadminError as exc:
            log.info("could not remove consumer %s from the group: %s", self.name, exc)

    # -- the settler thread --------------------------------------------------------------------------------

    def _settle_loop(self) -> None:
        """Send queued acks and give-backs in batches (one round trip for both), again after a failure
        until they went through: an entry given back too late is still pending to us, and only another
        consumer would take it back."""
        while True:
            with self._lock:
                while not self._acks and not self._gives and not self._drained.is_set():
                    self._lock.wait(0.5)
                acks, self._acks = self._acks[:ACK_BATCH], self._acks[ACK_BATCH:]
                gives, self._gives = self._gives[:ACK_BATCH], self._gives[ACK_BATCH:]
                if self._drained.is_set() and not acks and not gives:
                    self._settled.set()
                    return
            stream = (self.keys.stream,)
            calls: list[ScriptCall] = []
            if acks:
                calls.append((scripts.ACK, stream, (GROUP, self.name, *acks)))
            if gives:
                calls.append((scripts.RELEASE, stream, (GROUP, self.name, RELEASED, *gives)))
            try:
                replies = self.conn.run(calls)
                self.settle_retrying.succeeded()
            except TqadminError as exc:
                delay = self.settle_retrying.failed()
                if self._drained.is_set() and self.settle_retrying.failures > SETTLE_TRIES_WHEN_DRAINED:
                    log.warning("Redis: %s; %d acks not sent (those jobs will run again)", exc, len(acks))
                    continue
                with self._lock:
                    self._acks[:0] = acks
                    self._gives[:0] = gives
                log.warning("Redis: %s; acks are sent again shortly", exc)
                self.settle_retrying.wait(delay)
                continue
            refused = sum(1 for ok in (replies[0] if acks else ()) if not ok)
            if refused:
                log.warning(
                    "%d acks refused: those entries had passed to another consumer, which runs them", refused
                )

    # -- any thread ------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._lock.notify_all()

    def drained(self) -> None:
        self._drained.set()
        with self._lock:
            self._lock.notify_all()

    def alive(self, delivery: Delivery) -> bool:
        """Held and renewed within the lease: ours. Held but not renewed in time (Redis was away, the
        process was stopped): Redis says whether the entry is still ours, and it is renewed if so. When
        Redis cannot say, the run goes ahead: every settlement is fenced anyway."""
        with self._lock:
            renewed = self._held.get(delivery.token) if isinstance(delivery.token, str) else None
        if renewed is None:
            return False
        if time.monotonic() - renewed < self.lease_ms / 1000:
            return True
        try:
            return not self.extend([delivery], self.lease_ms / 1000)
        except TqadminError:
            return True

    def _take_back(self, deliveries: Sequence[Delivery]) -> list[str]:
        """The ids of ``deliveries`` still held, no longer counted as held (their settlement follows)."""
        with self._lock:
            ids = [d.token for d in deliveries if isinstance(d.token, str) and d.token in self._held]
            for entry_id in ids:
                del self._held[entry_id]
            self._lock.notify_all()
        return ids

    def ack(self, delivery: Delivery) -> bool:
        ids = self._take_back([delivery])
        if not ids:
            return False
        with self._lock:
            self._acks.extend(ids)
            self._lock.notify_all()
        return True

    def release(self, deliveries: Sequence[Delivery]) -> None:
        ids = self._take_back(deliveries)
        if ids:
            with self._lock:
                self._gives.extend(ids)
                self._lock.notify_all()

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        started = time.monotonic()
        with self._lock:
            mine = [d for d in deliveries if d.token in self._held]
            known_lost = [d for d in deliveries if d.token in self._lost]
        if not mine:
            return known_lost
        try:
            renewed = self.conn.run_one(
                (scripts.EXTEND, (self.keys.stream,), (GROUP, self.name, *(d.token for d in mine)))
            )
        except TqadminError as exc:
            log.warning("could not renew the lease of %d entries: %s", len(mine), exc)
            return []
        # an entry settled while the script ran is no longer ours either, but it was not lost
        with self._lock:
            lost = []
            for delivery, ok in zip(mine, renewed, strict=True):
                if delivery.token not in self._held:
                    continue
                if ok:
                    self._held[delivery.token] = started
                else:
                    lost.append(delivery)
                    del self._held[delivery.token]
                    self._lost[delivery.token] = None
            while len(self._lost) > LOST_KEPT:
                del self._lost[next(iter(self._lost))]
        return known_lost + lost

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        ids = self._take_back([delivery])
        if not ids:
            return False
        updated = headers_json({**delivery.message.headers, **headers})
        delay_ms = max(int(delay_s * 1000), 0)
        args = (GROUP, self.name, ids[0], updated, delay_ms, uuid.uuid4().hex)
        return self._settle(delivery, (scripts.RETRY, (self.keys.stream, self.keys.delay), args))

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        ids = self._take_back([delivery])
        if not ids:
            return False
        updated = headers_json({**delivery.message.headers, **headers})
        args = (GROUP, self.name, ids[0], updated)
        return self._settle(delivery, (scripts.DEAD_LETTER, (self.keys.stream, self.dlq.stream), args))

    def _settle(self, delivery: Delivery, call: ScriptCall) -> bool:
        try:
            done = bool(self.conn.run_one(call))
        except BaseException:
            with self._lock:  # not settled: still ours, so the worker may give it back
                if isinstance(delivery.token, str):
                    self._held[delivery.token] = time.monotonic()
            raise
        if not done:
            log.warning("entry %s had passed to another consumer: not settled here", delivery.token)
        return done
