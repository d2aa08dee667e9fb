"""The worker's side of a Redis stream: take entries in the queue's consumer group while jobs run elsewhere.

The I/O loop (the worker's main thread) takes entries: a script promotes the retries that are due and reads
new entries without blocking; when there are none it blocks in ``XREADGROUP`` no longer than the next due
retry, and at most 100 ms: that bounds how late a retry scheduled meanwhile is promoted. Every few
seconds a recovery pass claims entries whose holder let them sit idle past its lease (a dead or stopped
worker, or entries given back), oldest first; none while the server has been up for less than two leases
(idle times ran on while it restarted, and the live holders renew first).

A delivery is held for as long as the entry is pending to this consumer: the worker's monitor renews what it
holds (:meth:`RedisConsumer.extend`), and an entry idle past this consumer's lease may be claimed by another
one, which then owns it. Every settlement is a fenced script (:mod:`.scripts`): once the entry has passed to
someone else, ours does nothing and returns ``False``.

The bookkeeping is the shared :class:`~tqadmin.plugin.kit.leased.LeasedConsumer`'s: the window and deadlines,
acks queued to its settler thread (each batch one script call here, so a busy worker pays one round trip per
batch rather than per job), the loop's backoff and what a dead thread does. Retries and dead letters block
their job thread until done.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tqadmin.connect.backoff import RECONNECT_CAP_S
from tqadmin.connect.redis_client import ScriptCall, text
from tqadmin.errors import TqadminError
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.leased import LeasedConsumer
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
FORGET_EVERY_S = 60.0


def consumer_name() -> str:
    """Unique per consumer: two consumers never share a name, or one could settle the other's entries."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class RedisConsumer(LeasedConsumer[str]):
    broker_name = "Redis"
    loop_name = "the Redis consumer's loop"
    settler = "tq-redis-acks"
    lease_ends_with_deadline = False  # a pending entry stays ours until another consumer claims it

    def __init__(
        self, connection: Connection, keys: QueueKeys, dlq: QueueKeys, prefetch: int, lease_s: float
    ):
        super().__init__(prefetch, lease_s)
        self.conn = connection
        self.keys = keys
        self.dlq = dlq
        self.lease_ms = max(int(lease_s * 1000), 1)
        self.name = consumer_name()
        self._recover_every_s = min(max(lease_s / 4, 0.25), 5.0)
        self._registered = False
        self._next_recover = self._next_forget = 0.0
        self._cursor = "-"

    # -- the I/O thread ------------------------------------------------------------------------------------

    def fetch(self, room: int) -> list[Delivery]:
        if not self._registered:
            self._register()
            self._registered = True
        now = time.monotonic()
        if room > 0 and now >= self._next_recover:
            # Asked before every pass, not once: a consumer whose window stayed full while Redis restarted
            # sent nothing meanwhile, and its client reconnects without a word, so it saw no failure.
            grace = self._restart_grace_s()
            if grace > 0:
                self._next_recover = now + grace
            else:
                more, recovered = self._recover(room)
                self._next_recover = now + (0 if more else self._recover_every_s)
                if recovered:
                    return recovered
        if now >= self._next_forget:
            self._next_forget = now + FORGET_EVERY_S
            self._forget_idle_consumers()
        return self._take(room)

    def failed(self, delay_s: float) -> None:
        self._registered = False  # a Redis that lost its data (no persistence) lost the group too
        # Idle times ran on while Redis was away (or restarting): let the other live consumers renew what
        # they hold for one lease before claiming anything as abandoned.
        self._next_recover = time.monotonic() + delay_s + self.lease_ms / 1000

    def closed(self) -> None:
        try:
            self._forget(self.name)
        except TqadminError as exc:
            log.info("could not remove consumer %s from the group: %s", self.name, exc)

    def _register(self) -> None:
        """Join the group (made again if Redis lost it) and say this consumer's lease."""
        self.conn.ensure_group(self.keys.stream)
        with self.conn.translated():
            pipe = self.conn.client.pipeline(transaction=False)
            pipe.hset(self.keys.consumers, self.name, self.lease_ms)
            pipe.xgroup_createconsumer(self.keys.stream, GROUP, self.name)
            pipe.execute()

    def _restart_grace_s(self) -> float:
        """How long to wait before claiming anything as abandoned: a Redis up for less than two leases has
        just restarted, and idle times ran on while it was away, so every holder looks past its lease for a
        moment. Its uptime counts the time it spent loading its data, when nobody could renew. A holder
        whose renewal failed while it was away tries again after the reconnect backoff (at most
        :data:`~tqadmin.connect.backoff.RECONNECT_CAP_S`) and renews every third of a lease: until the server
        has been up for two leases and that cap, the live holders renew first, and a consumer that starts then
        takes none of their entries."""
        import redis

        lease_s = self.lease_ms / 1000
        with self.conn.translated():
            try:
                uptime = min(int(m.info("server")["uptime_in_seconds"]) for m in self.conn.masters())
            except (redis.ResponseError, KeyError, ValueError):  # INFO renamed or refused: assume the worst
                return lease_s
        return max(0.0, 2 * lease_s + RECONNECT_CAP_S - uptime)

    def _take(self, room: int) -> list[Delivery]:
        if room <= 0:
            self.pause()
            return []
        entries, wait_ms = self.conn.run_one(
            (scripts.TAKE, (self.keys.stream, self.keys.delay), (GROUP, self.name, room, PROMOTE_MAX))
        )
        if entries:
            return self._hand_out([(e[0], e[1], 1) for e in entries])
        if wait_ms == 0:
            return []  # a retry is due now: the next take promotes it
        block = MAX_BLOCK_MS if wait_ms < 0 else max(1, min(MAX_BLOCK_MS, int(wait_ms)))
        with self.conn.translated():
            read = self.conn.client.xreadgroup(
                GROUP, self.name, {self.keys.stream: ">"}, count=room, block=block
            )
        return [
            delivery
            for _stream, items in read or ()
            for delivery in self._hand_out([(entry_id, fields, 1) for entry_id, fields in items if fields])
        ]

    def _recover(self, room: int) -> tuple[bool, list[Delivery]]:
        """Claim entries idle past their holder's lease: whether there may be more right now, and them."""
        if room <= 0:
            return False, []
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
        more = len(claimed) >= room or self._cursor != "-"
        return more, self._hand_out([(c[0], c[1], int(c[2])) for c in claimed])

    def _hand_out(self, entries: Sequence[tuple[Any, Any, int]]) -> list[Delivery]:
        deliveries = []
        for entry_id, fields, count in entries:
            ident = text(entry_id)
            deliveries.append(Delivery(to_message(ident, fields, count), ident))
        self.hold(deliveries, time.monotonic() + self.lease_s)
        return deliveries

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

    # -- the settler thread and any thread ---------------------------------------------------------------

    def settle(self, acks: Sequence[str], releases: Sequence[str]) -> list[str]:
        """Queued acks and give-backs in one round trip. An entry given back too late is still pending to
        us, and only another consumer would take it back: the base sends them again until they went."""
        stream = (self.keys.stream,)
        calls: list[ScriptCall] = []
        if acks:
            calls.append((scripts.ACK, stream, (GROUP, self.name, *acks)))
        if releases:
            calls.append((scripts.RELEASE, stream, (GROUP, self.name, RELEASED, *releases)))
        replies = self.conn.run(calls)
        return [token for token, ok in zip(acks, replies[0] if acks else (), strict=True) if not ok]

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        renewed = self.conn.run_one(
            (scripts.EXTEND, (self.keys.stream,), (GROUP, self.name, *(d.token for d in deliveries)))
        )
        return [d for d, ok in zip(deliveries, renewed, strict=True) if not ok]

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        entry_id = self.take(delivery)
        if entry_id is None:
            return False
        updated = headers_json({**delivery.message.headers, **headers})
        delay_ms = max(int(delay_s * 1000), 0)
        args = (GROUP, self.name, entry_id, updated, delay_ms, uuid.uuid4().hex)
        return self._settle(delivery, (scripts.RETRY, (self.keys.stream, self.keys.delay), args))

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        entry_id = self.take(delivery)
        if entry_id is None:
            return False
        updated = headers_json({**delivery.message.headers, **headers})
        args = (GROUP, self.name, entry_id, updated)
        return self._settle(delivery, (scripts.DEAD_LETTER, (self.keys.stream, self.dlq.stream), args))

    def _settle(self, delivery: Delivery, call: ScriptCall) -> bool:
        try:
            done = bool(self.conn.run_one(call))
        except BaseException:
            self.hold([delivery], time.monotonic() + self.lease_s)  # not settled: still ours to give back
            raise
        if not done:
            log.warning("entry %s had passed to another consumer: not settled here", delivery.token)
        return done
