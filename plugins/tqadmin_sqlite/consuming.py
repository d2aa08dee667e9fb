"""The worker's side of the SQLite broker: claim rows under a lease, settle them fenced by their token.

Threads: :meth:`SQLiteConsumer.run`, in the calling thread, applies the acks and releases the job threads
queued and claims rows up to the prefetch window, all in one transaction a turn: a busy worker pays one
write lock per turn, not one per message. ``retry_later`` and ``dead_letter`` run in the job thread that
calls them, one transaction each (the copy in, the original out) on that thread's own connection.

Idle, the loop writes nothing: it asks SQLite whether another connection committed (``PRAGMA data_version``,
answered from shared memory) and sleeps until the next due time or lease end it knows of, polling at most
every 50 ms. A row in ``tqb_consumers``, touched every second, tells the listing this consumer is alive.

A delivery whose lease ended is no longer this consumer's, whether or not another has claimed it yet: it is
not acked, moved or extended (the row comes back to the queue by itself), and its slot in the window is freed.
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

from tqadmin.errors import ConnectTimeout
from tqadmin.plugin.background import Background
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.models import Message
from tqadmin.plugin.retrying import Retrying
from tqadmin.plugin.transport import Consumer
from tqadmin_sqlite import rows
from tqadmin_sqlite.database import BrokerFile, Tx
from tqadmin_sqlite.rows import Token

log = logging.getLogger("tqadmin.worker")

BEAT_S = 1.0  # how often a consumer says it is alive (the listing counts those seen within LIVE_S)
LIVE_S = 10.0
IDLE_POLL_S = (0.002, 0.05)  # first wait, longest wait (doubled while nothing changes)


def new_consumer_id(kind: str) -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SQLiteConsumer(Consumer):
    def __init__(self, broker: BrokerFile, queue: str, dlq: str, prefetch: int, lease_s: float) -> None:
        self.broker = broker
        self.queue = queue
        self.dlq = dlq
        self.prefetch = max(1, prefetch)
        self.lease_s = lease_s
        self.id = new_consumer_id("worker")
        self._cond = threading.Condition()
        self._acks: list[Token] = []
        self._releases: list[Token] = []
        self._held = 0  # handed out and not settled: what the prefetch window counts
        self._stop = False
        self._drained = False
        self._beat_at = -BEAT_S
        self._version: int | None = None  # data_version seen before the last claim that came back short
        self._next_due_ms: int | None = None
        self.background = Background()  # no thread of its own: it turns the loop's surprises into a fault
        self.retrying = Retrying()  # turns that found the file locked past the timeout

    # -- the I/O thread ------------------------------------------------------------------------------

    def run(self, on_message: Callable[[Delivery], None]) -> None:
        with self.background.io_loop("the SQLite consumer's loop"):
            self._consume(on_message)

    def _consume(self, on_message: Callable[[Delivery], None]) -> None:
        idle = IDLE_POLL_S[0]
        try:
            while True:
                with self._cond:
                    acks, self._acks = self._acks, []
                    releases, self._releases = self._releases, []
                    want = 0 if self._stop else self.prefetch - self._held
                    finished = self._stop and self._drained
                claim = want > 0 and self._worth_claiming()
                deliveries: list[Delivery] = []
                if acks or releases or claim or time.monotonic() - self._beat_at >= BEAT_S:
                    turned = self._turn(acks, releases, want if claim else 0)
                    if turned is None and not finished:
                        continue  # it failed and waited its backoff: try again at once
                    deliveries = turned or []
                if finished:
                    with self._cond:
                        if not self._acks and not self._releases:
                            return
                    continue
                for delivery in deliveries:
                    on_message(delivery)
                if deliveries or acks or releases:
                    idle = IDLE_POLL_S[0]
                    continue
                idle = self._wait(idle, want > 0)
        finally:
            self._goodbye()

    def _wait(self, idle: float, room: bool) -> float:
        """Sleep until something may have changed; returns the next idle wait."""
        timeout = BEAT_S
        if room:
            timeout = idle
            if self._next_due_ms is not None:
                timeout = min(timeout, max(0.0, self._next_due_ms / 1000 - self.broker.clock()))
        with self._cond:  # stop() and drained() notify, so a stop is seen at once
            if not (self._acks or self._releases or (self._stop and self._drained)):
                self._cond.wait(timeout)
        return min(idle * 2, IDLE_POLL_S[1])

    def _worth_claiming(self) -> bool:
        """Whether a claim may find something: another connection committed since the last short claim,
        or a due time (or lease end) it saw then has come."""
        if self._version is None:
            return True
        if self._data_version() != self._version:
            return True
        return self._next_due_ms is not None and self.broker.clock() * 1000 >= self._next_due_ms

    def _data_version(self) -> int:
        with self.broker.file.translated():
            return int(self.broker.file.connection().execute("PRAGMA data_version").fetchone()[0])

    def _turn(self, acks: list[Token], releases: list[Token], want: int) -> list[Delivery] | None:
        """Settle and claim in one transaction; ``None`` when it failed (what it was to settle is queued
        again, and the backoff waited)."""
        version = self._data_version() if want else None
        started = time.monotonic()
        lease_ms = round(self.lease_s * 1000)
        try:
            with self.broker.write() as tx:
                lost = rows.delete(tx, acks) + rows.put_back(tx, releases)
                claimed = rows.claim(tx, self.queue, self.id, want, lease_ms) if want else []
                until_ms = tx.now_ms + lease_ms
                if want:
                    self._version = version if len(claimed) < want else None
                    self._next_due_ms = self._next_due(tx)
                self._beat(tx, started)
        except ConnectTimeout as exc:  # the file stayed locked past the timeout: keep what is queued, retry
            delay = self.retrying.failed()
            log.warning("SQLite broker: %s; trying again in %.1f s", exc, delay)
            with self._cond:
                self._acks[:0], self._releases[:0] = acks, releases
            self.retrying.wait(delay)
            return None
        self.retrying.succeeded()
        for token in lost:
            log.warning(
                "delivery %s of %s: its lease had passed to another consumer; not settled",
                token.id,
                self.queue,
            )
        until = started + self.lease_s
        deliveries = [
            Delivery(
                rows.to_message(row, delivered=True),
                Token(row[0], row[6] + 1, self.id, self.queue, row[7], until=until, until_ms=until_ms),
            )
            for row in claimed
        ]
        with self._cond:
            self._held += len(deliveries)
        return deliveries

    def _next_due(self, tx: Tx) -> int | None:
        (due,) = tx.db.execute(
            "SELECT MIN(available_ms) FROM tqb_messages WHERE queue = ?", (self.queue,)
        ).fetchone()
        return None if due is None else int(due)

    def _beat(self, tx: Tx, now: float) -> None:
        if now - self._beat_at < BEAT_S:
            return
        self._beat_at = now
        tx.db.execute(
            "INSERT INTO tqb_consumers (id, queue, seen_ms) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET seen_ms = excluded.seen_ms",
            (self.id, self.queue, tx.now_ms),
        )

    def _goodbye(self) -> None:
        """Leave the listing at once (a consumer that dies instead drops out after ``LIVE_S``)."""
        try:
            with self.broker.write() as tx:
                tx.db.execute("DELETE FROM tqb_consumers WHERE id = ?", (self.id,))
        except Exception as exc:  # the file went away: it will drop out of the listing by itself
            log.warning("SQLite broker: could not sign the consumer off: %s", exc)

    # -- any thread -------------------------------------------------------------------------------

    def _take(self, delivery: Delivery) -> Token | None:
        """The delivery's token if it is still this consumer's to settle; it is settled from then on."""
        token = delivery.token
        assert isinstance(token, Token)
        with self._cond:
            if token.settled:
                return None
            token.settled = True
            self._held -= 1
        return token if token.leased(time.monotonic(), self.broker.wall_ms()) else None

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()

    def drained(self) -> None:
        with self._cond:
            self._drained = True
            self._cond.notify()

    def alive(self, delivery: Delivery) -> bool:
        token = delivery.token
        assert isinstance(token, Token)
        if token.settled:
            return False
        if token.leased(time.monotonic(), self.broker.wall_ms()):
            return True
        self._take(delivery)  # its lease ended: free its slot; the row comes back to the queue by itself
        return False

    def ack(self, delivery: Delivery) -> bool:
        token = self._take(delivery)
        if token is None:
            return False
        with self._cond:
            self._acks.append(token)
            self._cond.notify()
        return True

    def release(self, deliveries: Sequence[Delivery]) -> None:
        tokens = [t for t in map(self._take, deliveries) if t is not None]
        if tokens:
            with self._cond:
                self._releases.extend(tokens)
                self._cond.notify()

    def extend(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Renew the leases still held; returns the deliveries this consumer no longer holds (settled, or
        whose lease ended or passed to another consumer)."""
        now, wall_ms = time.monotonic(), self.broker.wall_ms()
        held = [
            d
            for d in deliveries
            if isinstance(d.token, Token) and not d.token.settled and d.token.leased(now, wall_ms)
        ]
        gone = [d for d in deliveries if d not in held]
        if held:
            tokens = [d.token for d in held if isinstance(d.token, Token)]
            lease_ms = round(lease_s * 1000)
            with self.broker.write() as tx:
                lost = rows.extend(tx, tokens, lease_ms)
                until_ms = tx.now_ms + lease_ms
            for delivery, token in zip(held, tokens, strict=True):
                if token in lost:
                    gone.append(delivery)
                else:
                    token.until = max(token.until, now + lease_s)
                    token.until_ms = max(token.until_ms, until_ms)
        for delivery in gone:
            self._take(delivery)  # frees its slot in the window if it still had one
        return gone

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self._replace(delivery, self.queue, headers, round(max(0.0, delay_s) * 1000))

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        return self._replace(delivery, self.dlq, headers, 0)

    def _replace(self, delivery: Delivery, target: str, headers: Mapping[str, Any], delay_ms: int) -> bool:
        token = self._take(delivery)
        if token is None:
            return False
        message = delivery.message
        copy = Message(message.body, {**message.headers, **headers}, message.properties, message.id)
        with self.broker.write() as tx:
            if target == self.dlq:
                rows.register(tx, target, None)
            done = rows.replace(tx, token, target, copy, tx.now_ms + delay_ms)
        if not done:
            log.warning(
                "delivery %s of %s: its lease had passed to another consumer; not moved", token.id, self.queue
            )
        return done
