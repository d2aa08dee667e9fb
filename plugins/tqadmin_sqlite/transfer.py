"""Safe transfers on the SQLite broker: rows taken under a session lease, copies in before originals out.

A fetched row is claimed by the session (not counted as a delivery: an admin's look is not a worker's), so
no worker takes it meanwhile and the session never fetches it twice. The session's lease is renewed while it
works; if the admin process dies, its rows come back by themselves when the lease ends. Closing the session
puts back every row it did not ack, each at its old place in the queue.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from tqadmin.errors import BrokerError
from tqadmin.plugin.base import Delivery, TransferSession
from tqadmin.plugin.models import Message
from tqadmin_sqlite import rows
from tqadmin_sqlite.consuming import new_consumer_id
from tqadmin_sqlite.database import BrokerFile, Tx
from tqadmin_sqlite.rows import Token

SESSION_LEASE_S = 120.0


class SQLiteTransferSession(TransferSession):
    def __init__(self, broker: BrokerFile, queue: str, lease_s: float = SESSION_LEASE_S) -> None:
        self._broker = broker
        self._queue = queue
        self._lease_s = lease_s
        self._id = new_consumer_id("admin")
        self._held: dict[int, Token] = {}  # row id -> token of what was fetched and not acked or released
        self._handed_out = 0
        self._renewed_at = time.monotonic()
        with broker.read() as (db, _):
            rows.require_queues(db, broker.where, queue)
            (self._count,) = db.execute(
                "SELECT COUNT(*) FROM tqb_messages WHERE queue = ?", (queue,)
            ).fetchone()

    def count_at_start(self) -> int:
        """Every message of the queue when the session opened, held by a consumer or not (a held one is
        fetched only if its holder lets it go)."""
        return int(self._count)

    def fetch(self, limit: int) -> Sequence[Delivery]:
        want = min(limit, self._count - self._handed_out)
        if want <= 0:
            return []
        lease_ms = round(self._lease_s * 1000)
        with self._broker.write() as tx:
            self._renew(tx)
            claimed = rows.claim(tx, self._queue, self._id, want, lease_ms, admin=True)
        deliveries = []
        for row in claimed:
            token = Token(row[0], row[6], self._id, self._queue, before_ms=row[7])
            self._held[token.id] = token
            deliveries.append(Delivery(rows.to_message(row), token))
        self._handed_out += len(deliveries)
        return deliveries

    def publish_confirmed(self, items: Sequence[tuple[str, Message]]) -> None:
        if not items:
            return
        with self._broker.write() as tx:
            hint = "create it, or pick another target; the originals were left in place"
            rows.require_routable(tx.db, self._broker.where, (queue for queue, _ in items), hint)
            for queue, message in items:
                rows.insert(tx, queue, [message])

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        tokens = self._settle(deliveries)
        if not tokens:
            return
        with self._broker.write() as tx:
            self._renew(tx)
            lost = rows.delete(tx, tokens)
        if lost:
            raise BrokerError(
                f"{len(lost)} message(s) of {self._queue!r} were taken back from this session before it"
                " removed them (its lease ended): they were copied and are still in the source too"
            )

    def release(self, deliveries: Sequence[Delivery]) -> None:
        tokens = self._settle(deliveries)
        if tokens:
            with self._broker.write() as tx:
                rows.put_back(tx, tokens)

    def close(self) -> None:
        tokens, self._held = list(self._held.values()), {}
        if tokens:
            with self._broker.write() as tx:
                rows.put_back(tx, tokens)

    def _settle(self, deliveries: Sequence[Delivery]) -> list[Token]:
        tokens = []
        for delivery in deliveries:
            token = delivery.token
            if isinstance(token, Token) and self._held.pop(token.id, None) is token:
                tokens.append(token)
        return tokens

    def _renew(self, tx: Tx) -> None:
        """Keep every row the session holds for another lease, once a third of the lease has passed."""
        if time.monotonic() - self._renewed_at < self._lease_s / 3 or not self._held:
            return
        self._renewed_at = time.monotonic()
        tx.db.execute(
            "UPDATE tqb_messages SET available_ms = ? WHERE queue = ? AND consumer = ?",
            (tx.now_ms + round(self._lease_s * 1000), self._queue, self._id),
        )
