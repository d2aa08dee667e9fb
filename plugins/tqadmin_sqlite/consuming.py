"""The worker's side of the SQLite broker: claim rows under a lease, settle them fenced by their token.

The bookkeeping (the window, deadlines, queued settles, the loop and its backoff) is the shared
:class:`~tqadmin.plugin.kit.leased.LeasedConsumer`'s; this module says how SQLite claims, settles and renews.
Each turn of :meth:`SQLiteConsumer.fetch`, in the calling thread, applies the acks and releases the job
threads queued and claims rows up to the prefetch window, all in one transaction: a busy worker pays one
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
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from tqadmin.errors import ConnectTimeout
from tqadmin.plugin.base import Delivery
from tqadmin.plugin.kit.leased import LeasedConsumer
from tqadmin.plugin.models import Message
from tqadmin_sqlite import rows
from tqadmin_sqlite.database import BrokerFile, Tx
from tqadmin_sqlite.rows import Token

log = logging.getLogger("tqadmin.worker")

BEAT_S = 1.0  # how often a consumer says it is alive (the listing counts those seen within LIVE_S)
LIVE_S = 10.0
IDLE_POLL_S = (0.002, 0.05)  # first wait, longest wait (doubled while nothing changes)


def new_consumer_id(kind: str) -> str:
    return f"{kind}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class SQLiteConsumer(LeasedConsumer[Token]):
    broker_name = "SQLite broker"
    loop_name = "the SQLite consumer's loop"
    transient = (ConnectTimeout,)  # the file stayed locked past the timeout: keep what is queued, retry
    fatal = ()

    def __init__(self, broker: BrokerFile, queue: str, dlq: str, prefetch: int, lease_s: float) -> None:
        super().__init__(prefetch, lease_s)
        self.broker = broker
        self.queue = queue
        self.dlq = dlq
        self.id = new_consumer_id("worker")
        self._idle = IDLE_POLL_S[0]
        self._beat_at = -BEAT_S
        self._version: int | None = None  # data_version seen before the last claim that came back short
        self._next_due_ms: int | None = None

    # -- the I/O thread ------------------------------------------------------------------------------

    def fetch(self, room: int) -> list[Delivery]:
        """Apply the queued acks and releases and claim up to ``room`` rows in one transaction, when there
        is something to apply, a claim may find something, or a beat is due; otherwise sleep."""
        with self.queued() as (acks, releases):
            claim = room > 0 and self._worth_claiming()
            if acks or releases or claim or time.monotonic() - self._beat_at >= BEAT_S:
                deliveries = self._turn(acks, releases, room if claim else 0)
                if deliveries or acks or releases:
                    self._idle = IDLE_POLL_S[0]
                    return deliveries
        self._wait(room > 0)
        return []

    def _wait(self, room: bool) -> None:
        """Sleep until something may have changed (a settle, a stop and a drain wake it at once)."""
        timeout = BEAT_S
        if room:
            timeout = self._idle
            if self._next_due_ms is not None:
                timeout = min(timeout, max(0.0, self._next_due_ms / 1000 - self.broker.clock()))
        self.pause(timeout)
        self._idle = min(self._idle * 2, IDLE_POLL_S[1])

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

    def _turn(self, acks: list[Any], releases: list[Any], want: int) -> list[Delivery]:
        """Settle and claim in one transaction (raising ``ConnectTimeout`` when the file stayed locked)."""
        version = self._data_version() if want else None
        started = time.monotonic()
        lease_ms = round(self.lease_s * 1000)
        with self.broker.write() as tx:
            lost = rows.delete(tx, acks) + rows.put_back(tx, releases)
            claimed = rows.claim(tx, self.queue, self.id, want, lease_ms) if want else []
            until_ms = tx.now_ms + lease_ms
            if want:
                self._version = version if len(claimed) < want else None
                self._next_due_ms = self._next_due(tx)
            self._beat(tx, started)
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
        self.hold(deliveries, until)
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

    def closed(self) -> None:
        """Leave the listing at once (a consumer that dies instead drops out after ``LIVE_S``)."""
        try:
            with self.broker.write() as tx:
                tx.db.execute("DELETE FROM tqb_consumers WHERE id = ?", (self.id,))
        except Exception as exc:  # the file went away: it will drop out of the listing by itself
            log.warning("SQLite broker: could not sign the consumer off: %s", exc)

    # -- any thread -------------------------------------------------------------------------------

    def within(self, delivery: Delivery, deadline: float) -> bool:
        token = delivery.token
        assert isinstance(token, Token)
        return token.leased(time.monotonic(), self.broker.wall_ms())

    def renew(self, deliveries: Sequence[Delivery], lease_s: float) -> list[Delivery]:
        """Renew the leases in one transaction; returns the deliveries whose lease passed to another
        consumer."""
        tokens = [d.token for d in deliveries if isinstance(d.token, Token)]
        started = time.monotonic()
        lease_ms = round(lease_s * 1000)
        with self.broker.write() as tx:
            lost = rows.extend(tx, tokens, lease_ms)
            until_ms = tx.now_ms + lease_ms
        for token in tokens:
            if token not in lost:
                token.until = max(token.until, started + lease_s)
                token.until_ms = max(token.until_ms, until_ms)
        return [d for d in deliveries if d.token in lost]

    def retry_later(self, delivery: Delivery, delay_s: float, headers: Mapping[str, Any]) -> bool:
        return self._replace(delivery, self.queue, headers, round(max(0.0, delay_s) * 1000))

    def dead_letter(self, delivery: Delivery, headers: Mapping[str, Any]) -> bool:
        return self._replace(delivery, self.dlq, headers, 0)

    def _replace(self, delivery: Delivery, target: str, headers: Mapping[str, Any], delay_ms: int) -> bool:
        token = self.take(delivery)
        if not isinstance(token, Token):
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
